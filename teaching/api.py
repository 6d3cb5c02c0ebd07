"""JSON endpoints of the teaching app (mounted under /api/v1 by consoles.urls)."""

from ninja import Router

router = Router(tags=["teaching"])
