"""Fixed-window rate limits counted in Django's cache framework.

The counts live in the cache alias `settings.RATE_LIMIT_CACHE` (the database
cache by default: shared by every worker and server on one database; see the
settings for what its non-atomic increment means under a burst).
"""

import hashlib
import math
import time

from django.conf import settings
from django.core.cache import caches

from .errors import RateLimited

PERIOD_SECONDS = 60


def _clock() -> float:
    # One seam for the tests: a window is a wall-clock minute, and a test that
    # crossed a minute's end would see its count start again.
    return time.time()


def rate_limit_hit(*, scope: str, ident: str, limit: int, what: str, period: int = PERIOD_SECONDS) -> None:
    """Count one request of `ident` in `scope`; raise RateLimited past `limit` a `period`.

    A refused request counts too, so a client that keeps retrying early stays refused
    until the window ends: `Retry-After` tells it when.
    """
    cache = caches[settings.RATE_LIMIT_CACHE]
    now = _clock()
    window = int(now // period)
    # Hashed: a session id is the client's text (any length, any characters), and
    # cache keys have a length and character limit on some backends.
    digest = hashlib.sha256(ident.encode("utf-8")).hexdigest()[:32]
    key = f"rl:{scope}:{digest}:{window}"
    cache.add(key, 0, timeout=period * 2)
    try:
        count = cache.incr(key)
    except ValueError:  # culled or expired between the two calls: this is the window's first
        cache.set(key, 1, timeout=period * 2)
        count = 1
    if count > limit:
        retry_after = max(1, math.ceil((window + 1) * period - now))
        raise RateLimited(
            f"Too many requests {what}: at most {limit} a minute. Try again in {retry_after} s.",
            retry_after=retry_after,
        )
