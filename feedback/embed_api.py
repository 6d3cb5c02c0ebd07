"""The embed API: what the flag widget (`/embed/flag.js`) calls from a web page with
a publishable key (consoles.embed: listed origins, CORS, rate limits).

`POST /embed/flags` is `POST /flags` itself, called with the key's principal: the
same body, the same validation and errors, the same write path. It adds only what a
key in a web page needs: a `session_id` (its limit is per session) and no captures.
"""

import json

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Router, Schema

from consoles.access import Principal
from consoles.api import ERRORS, WRITE_ERRORS, ErrorOut
from consoles.embed import publishable_auth
from consoles.errors import PermissionDeniedError
from consoles.ratelimit import rate_limit_hit

from .api import FlagIn, flag_create
from .services import MAX_ID

router = Router(tags=["embed"], auth=[publishable_auth])

LIMITED = {429: ErrorOut}


class EmbedFlagIn(FlagIn):
    session_id: str = Field(min_length=1, max_length=MAX_ID, description="The conversation's id: required "
                            "here, each session may send a limited number of flags a minute.")


class EmbedFlagOut(Schema):
    id: str = Field(description="The flag's id (`fb_…`), a hash of application, message and region.")
    created: bool = Field(description="False when this message and region had been flagged already.")


class ProblemOut(Schema):
    key: str = Field(description="Send it as the flag's `problem`.")
    label: str = Field(description="The plain-language wording to show the user.")


class ProblemsOut(Schema):
    problems: list[ProblemOut] = Field(description="The application's problems, in its order.")


@router.get("/embed/problems", response={200: ProblemsOut, **ERRORS, **LIMITED},
            summary="The problems a user may pick (publishable key)")
def embed_problems(request: HttpRequest) -> dict:
    """What the widget offers when a user flags a message: each problem's key and wording
    (not the detector axis it suggests, which is the curators' business).

    A publishable key only (`Authorization: Bearer cc_pub_…`), from one of its origins;
    rate-limited per key (429 with `Retry-After`)."""
    principal: Principal = request.auth
    return {"problems": [{"key": p["key"], "label": p["label"]} for p in principal.application.problems]}


@router.post("/embed/flags", response={201: EmbedFlagOut, 200: EmbedFlagOut, **WRITE_ERRORS, **LIMITED},
             summary="Flag a message from the widget (publishable key)")
def embed_flag_create(request: HttpRequest, payload: EmbedFlagIn):
    """The body of `POST /api/v1/flags` (`session_id` required), answered the same way:
    201 for a new user flag, 200 when this `(message_id, region)` was flagged already,
    422 naming a bad field. The author is the end user via the key, as for an integration.
    The answer is the flag's id only: the key is public, and the flag's stored texts and its
    review (which a repeated message would otherwise return) are not the page's to read.

    A publishable key only, from one of its origins; it creates user flags only (a
    `capture_reason` is 403). Rate-limited per key and per `session_id` (429 with
    `Retry-After`)."""
    if payload.capture_reason is not None:
        raise PermissionDeniedError(
            "A publishable key creates user flags only; captures come from the runtime's application token.",
            code="publishable_key_user_flags_only",
            fields={"capture_reason": "not allowed with a publishable key"},
        )
    principal: Principal = request.auth
    rate_limit_hit(scope="session", ident=f"{principal.token.pk}:{payload.session_id}",
                   limit=settings.EMBED_RATE_PER_SESSION, what="from this session")
    response = flag_create(request, payload)
    # The same response object, so what flag_create attached to it (its after-answer work) still runs.
    response.content = json.dumps({"id": json.loads(response.content)["id"], "created": response.status_code == 201})
    return response
