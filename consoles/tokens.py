"""Token secrets: random, shown once, stored as a SHA-256 digest.

A token carries 256 bits from `secrets`, so a fast hash is enough (no guessing
to slow down); the digest column is unique and indexed for the lookup.
"""

import hashlib
import secrets

PREFIXES = {"application": "cc_app_", "personal": "cc_pat_", "publishable": "cc_pub_"}
PUBLISHABLE_PREFIX = PREFIXES["publishable"]


def token_generate(kind: str) -> str:
    return PREFIXES[kind] + secrets.token_urlsafe(32)


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def token_display_prefix(secret: str) -> str:
    return secret[:12]
