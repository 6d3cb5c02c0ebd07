"""The timestamp shapes of the console: one for files and manifests, one for people.

Screens show times in UTC (TIME_ZONE) and say so: templates write
`{{ moment|date:"Y-m-d H:i" }} UTC`, and Python text that people read (messages,
table cells built in code) uses `on_screen`, the same shape."""

from datetime import UTC, datetime


def iso_utc(moment: datetime | None) -> str | None:
    """`2026-06-26T10:14:33+00:00`: seed 001's timestamp shape (UTC, whole seconds)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        # Django stores UTC; a naive value here can only be UTC read back without tzinfo.
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def on_screen(moment: datetime) -> str:
    """`2026-06-26 10:14 UTC`: a time as the screens show it."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
