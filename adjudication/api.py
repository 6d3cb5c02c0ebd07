"""JSON endpoints of the adjudication app (mounted under /api/v1 by consoles.urls)."""

from ninja import Router

router = Router(tags=["adjudication"])
