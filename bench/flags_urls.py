"""The console's URLs plus the ingest benchmark's reference: /bench/echo, a bare
Django JSON endpoint (parse the body, answer JSON) behind the same middleware.
Its figure is shown beside the flags' as information, not as a target."""

import json

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from consoles.urls import urlpatterns as console_urlpatterns


@csrf_exempt
def echo(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    return JsonResponse({"id": body.get("message_id"), "status": "pending"}, status=201)


urlpatterns = [
    path("bench/echo", echo),
    *console_urlpatterns,
]
