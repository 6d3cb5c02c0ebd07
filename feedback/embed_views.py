"""The flag widget's script and the sample chat page that embeds it.

Neither needs a login or names an application: the script is the same for every
host page, and the sample page exists only where the demo data made its key.
"""

import hashlib
from functools import cache
from pathlib import Path

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import etag, require_safe

from consoles.management.commands.load_demo import (
    DEMO_PUBLISHABLE_APPLICATION,
    DEMO_PUBLISHABLE_KEY,
)
from consoles.models import ApiToken, TokenKind
from consoles.tokens import token_digest

WIDGET = Path(__file__).resolve().parent / "embed" / "flag.js"


@cache
def _widget() -> tuple[bytes, str]:
    body = WIDGET.read_bytes()
    return body, hashlib.sha256(body).hexdigest()[:32]


@require_safe
@etag(lambda request: _widget()[1])
def flag_js(request: HttpRequest) -> HttpResponse:
    """`<script src=".../embed/flag.js" defer>` in a page of another origin: a plain
    script (not a module, so no CORS is needed to load it), cached briefly so a new
    version reaches host pages within minutes, revalidated by its ETag."""
    body, _ = _widget()
    response = HttpResponse(body, content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=300"
    # Host pages that isolate themselves (Cross-Origin-Embedder-Policy) may still load it.
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response


@require_safe
def demo_chat(request: HttpRequest) -> HttpResponse:
    """A chat as an integration would render it, each message with its flag control,
    using the demo application's publishable key: flag an answer here, then find it
    pending in the queue. 404 where `load_demo` has not run (any real deployment)."""
    key = ApiToken.objects.filter(
        digest=token_digest(DEMO_PUBLISHABLE_KEY), kind=TokenKind.PUBLISHABLE, revoked_at__isnull=True
    ).select_related("application").first()
    if key is None:
        raise Http404("The sample chat page needs the demo data (manage.py load_demo).")
    return render(request, "feedback/demo_chat.html", {
        "key": DEMO_PUBLISHABLE_KEY,
        "application": key.application,
        "origins": key.origins,
        "here": request.build_absolute_uri("/").rstrip("/"),
        "slug": DEMO_PUBLISHABLE_APPLICATION,
    })
