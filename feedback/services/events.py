"""What every feedback write shares: who is acting (Actor), the text limits, and
the history row each transition appends in its own transaction."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from consoles.models import ApiToken

from ..history import history_written
from ..models import (
    ActorKind,
    Flag,
    FlagEvent,
)

CLAIM_DURATION = timedelta(minutes=5)
MAX_TEXT = 100_000  # characters per text field; the body limit caps the total anyway
# A note (the flagger's, a reviewer's) is a person's words, not a transcript: one limit
# for the API, the screens and every other caller.
NOTE_LIMIT = 10_000
MAX_ID = 200


@dataclass(frozen=True)
class Actor:
    """Who is writing: a human user or an application token (never both)."""

    user: AbstractBaseUser | None = None
    token: ApiToken | None = None

    def __post_init__(self) -> None:
        if (self.user is None) == (self.token is None):
            raise ValueError("An actor is a user or a token, exactly one.")

    @property
    def is_human(self) -> bool:
        return self.user is not None


def _event_row(
    *,
    flag: Flag,
    action: str,
    from_status: str,
    to_status: str,
    actor: Actor | None,
    changes: dict[str, Any] | None = None,
    at=None,
) -> FlagEvent:
    """The history row of one transition, not yet written."""
    if actor is None:
        kind, user, token = ActorKind.SYSTEM, None, None
    elif actor.is_human:
        kind, user, token = ActorKind.USER, actor.user, None
    else:
        kind, user, token = ActorKind.TOKEN, None, actor.token
    return FlagEvent(
        application_id=flag.application_id,
        flag=flag,
        action=action,
        from_status=from_status,
        to_status=to_status,
        actor_kind=kind,
        actor_user=user,
        actor_token=token,
        changes=changes or {},
        created_at=at or timezone.now(),
    )


def _event(**transition: Any) -> FlagEvent:
    """Append the history row of one transition (in the caller's transaction)."""
    row = _event_row(**transition)
    history_written(application_id=row.application_id, at=row.created_at)
    row.save()  # a new row: FlagEvent.save() refuses only changing an old one
    return row


def _text(value: Any, name: str, errors: dict[str, str], *, limit: int = MAX_TEXT) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors[name] = "Must be a string."
        return ""
    if len(value) > limit:
        errors[name] = f"At most {limit} characters."
    elif "\x00" in value:
        # The API's schema refuses it first; any other caller must not reach
        # PostgreSQL, which cannot store NUL and would fail the insert.
        errors[name] = "Must not contain NUL (\\u0000) characters."
    return value
