from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from consoles.access import member_required


@member_required()
def index(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "consoles/placeholder.html",
        {"heading": "Teaching proposals", "message": "Nothing here yet."},
    )
