"""The console's URLs plus /bench/echo, the bare Django JSON reference endpoint."""

import json

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from consoles.urls import urlpatterns as console_urlpatterns


@csrf_exempt
def echo(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    return JsonResponse({"id": body.get("message_id"), "status": "pending"}, status=201)


urlpatterns = [path("bench/echo", echo), *console_urlpatterns]
