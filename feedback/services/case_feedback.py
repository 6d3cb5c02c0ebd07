"""Operators' and agents' feedback on a case."""

import json
from typing import Any

from django.db import transaction

from consoles.errors import InvalidInput
from consoles.models import Application

from ..models import (
    AuthorKind,
    CaseFeedback,
    Disposition,
)
from .events import MAX_ID, Actor

MAX_NOTE = 5_000


def case_feedback_submit(
    *,
    application: Application,
    case_ref: str,
    manifest: dict[str, Any],
    disposition: str,
    note: str = "",
    actor: Actor,
) -> CaseFeedback:
    """Record a disposition on a case, freezing the case's replay manifest into
    the row. The caller looks the case up and passes its manifest as a value;
    nothing here reads or changes a case, its labels or its gold label."""
    errors: dict[str, str] = {}
    if disposition not in Disposition.values:
        errors["disposition"] = f"choose one of: {', '.join(Disposition.values)}"
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        errors["note"] = f"at most {MAX_NOTE} characters"
    if not case_ref or len(case_ref) > MAX_ID:
        errors["case_ref"] = "required, at most 200 characters"
    if not isinstance(manifest, dict):
        errors["bound_manifest"] = "the case's replay manifest must be an object"
    if errors:
        raise InvalidInput("The feedback is not valid.", fields=errors)
    with transaction.atomic():
        return CaseFeedback.objects.create(
            application=application,
            case_ref=case_ref,
            disposition=disposition,
            note=note,
            bound_manifest=json.loads(json.dumps(manifest)),  # a detached copy, never a shared reference
            author_kind=AuthorKind.OPERATOR if actor.is_human else AuthorKind.AGENT,
            author_user=actor.user,
            author_token=actor.token,
        )
