"""The console's URLs plus two references for the ingest benchmark:

- /bench/echo: the bare Django JSON endpoint (parse the body, answer JSON);
- /bench/floor/flags: POST /api/v1/flags up to its write: the same ninja
  operation shape, token authentication, body schema, checks and answer, with
  nothing stored. What separates it from /api/v1/flags is the storage alone.
"""

import json

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI

from consoles.api import bearer_auth
from consoles.models import Role
from consoles.urls import urlpatterns as console_urlpatterns
from feedback.api import FlagIn, _actor, flag_out
from feedback.services import flag_prepare


@csrf_exempt
def echo(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    return JsonResponse({"id": body.get("message_id"), "status": "pending"}, status=201)


floor = NinjaAPI(urls_namespace="bench-floor", auth=[bearer_auth], docs_url=None, openapi_url=None)


@floor.post("/flags")
def flag_unstored(request: HttpRequest, payload: FlagIn):
    principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    flag = flag_prepare(
        application=application,
        actor=_actor(principal),
        capture_reason=payload.capture_reason or "",
        **payload.model_dump(exclude={"application_id", "capture_reason"}),
    )
    return floor.create_response(request, flag_out(flag), status=201)


urlpatterns = [path("bench/echo", echo), path("bench/floor/", floor.urls), *console_urlpatterns]
