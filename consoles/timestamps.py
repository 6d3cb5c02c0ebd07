"""The one timestamp shape the console writes into files and manifests."""

from datetime import UTC, datetime


def iso_utc(moment: datetime | None) -> str | None:
    """`2026-06-26T10:14:33+00:00`: seed 001's timestamp shape (UTC, whole seconds)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        # Django stores UTC; a naive value here can only be UTC read back without tzinfo.
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")
