"""Captures: the runtime's own low-confidence or refused answers, bounded per
application by capture_max_items (the oldest pending capture makes room)."""


from django.db import connection
from django.db.models import F

from consoles.models import Application

from ..models import (
    AuthorKind,
    EventAction,
    Flag,
    FlagStatus,
)
from .events import _event


def _make_room_for_capture(application: Application, now, *, incoming: int) -> list[str]:
    """Drop the oldest pending captures so `incoming` more fit under capture_max_items.

    Runs inside the caller's transaction. On PostgreSQL the application row is
    locked so two concurrent captures cannot both see room; SQLite's immediate
    transactions already serialize writers.
    """
    if connection.vendor == "postgresql":
        Application.objects.select_for_update().filter(pk=application.pk).first()
    pending = Flag.objects.filter(
        application=application, status=FlagStatus.PENDING, author_kind=AuthorKind.AGENT
    )
    excess = pending.count() - application.capture_max_items + incoming
    if excess <= 0:
        return []
    victims = list(pending.order_by("created_at", "id")[:excess])
    dropped: list[str] = []
    for victim in victims:
        # The text goes (capacity bounds what is stored); the row and its
        # history stay, so the drop is auditable. Only while still pending: a
        # curator's decision committed since the read keeps its capture (and
        # leaves the room the drop would have made).
        if not Flag.objects.filter(pk=victim.pk, status=FlagStatus.PENDING, version=victim.version).update(
            status=FlagStatus.DROPPED, prompt="", context="", answer="", note="", correction="", detector_scores={},
            claimed_by=None, claimed_until=None, version=F("version") + 1, updated_at=now,
        ):
            continue
        dropped.append(victim.public_id)
        _event(flag=victim, action=EventAction.DROPPED, from_status=FlagStatus.PENDING,
               to_status=FlagStatus.DROPPED, actor=None, at=now,
               changes={"reason": "capture_max_items", "capture_max_items": application.capture_max_items})
    return dropped
