"""Publishable keys (`cc_pub_…`): what the flag widget in a web page authenticates with.

A publishable key sits in a page anyone can read, so it is not a secret and is
bounded by what it may do, not by who knows it:

- it is accepted on the embed routes only (`/embed/…`, `/api/v1/embed/…`): every
  other route answers 403 before it runs, and the API's own bearer auth refuses it
  too, in case a route is mounted elsewhere;
- browsers may use it only from its listed origins: CORS headers name a listed
  origin and nothing else, a preflight from an unlisted origin is 403, and a request
  whose `Origin` is not on the key is 403. (A request without `Origin` is not a
  browser's cross-origin request: a script can send any `Origin` it likes, so the
  list guards pages, not the API; the limits below bound everyone);
- it is rate-limited per key and per `session_id` (consoles.ratelimit).
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django.views.decorators.debug import sensitive_variables
from ninja.security import HttpBearer

from .access import Principal
from .api import error_response
from .errors import PermissionDeniedError
from .models import ApiToken, TokenKind
from .ratelimit import rate_limit_hit
from .services import token_authenticate
from .tokens import PUBLISHABLE_PREFIX

EMBED_PREFIXES = ("/embed/", "/api/v1/embed/")
EMBED_API_PREFIX = "/api/v1/embed/"
def _bearer_secret(request: HttpRequest) -> str:
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    return credential.strip() if scheme.lower() == "bearer" else ""


def origin_listed_on_any_key(origin: str) -> bool:
    """Whether some active publishable key lists `origin`. A preflight carries no key (a
    browser never sends credentials on one), so this is all it can be answered by; the
    request itself is then checked against its own key."""
    listed = ApiToken.objects.filter(kind=TokenKind.PUBLISHABLE, revoked_at__isnull=True).values_list(
        "origins", flat=True
    )
    return any(origin in origins for origins in listed)


class EmbedMiddleware:
    """Keeps publishable keys on the embed routes and answers CORS for the embed API."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if not path.startswith(EMBED_PREFIXES) and _bearer_secret(request).startswith(PUBLISHABLE_PREFIX):
            # By its prefix alone: a publishable key, real or not, has no business here.
            return error_response(
                403, "publishable_key_not_allowed",
                "A publishable key (cc_pub_…) may only be used on the embed API (/api/v1/embed/…).",
            )
        if not path.startswith(EMBED_API_PREFIX):
            return self.get_response(request)
        origin = request.headers.get("Origin")
        if request.method == "OPTIONS" and origin is not None and "Access-Control-Request-Method" in request.headers:
            return self._preflight(origin)
        response = self.get_response(request)
        patch_vary_headers(response, ["Origin"])
        if origin is not None and self._allowed(request, origin):
            response["Access-Control-Allow-Origin"] = origin
            # The widget reads how long to wait from a 429.
            response["Access-Control-Expose-Headers"] = "Retry-After"
        return response

    @staticmethod
    def _allowed(request: HttpRequest, origin: str) -> bool:
        token: ApiToken | None = getattr(request, "embed_token", None)
        if token is not None:
            return origin in token.origins
        # No key got as far as its origin check (missing, unknown or revoked: 401; a
        # refused origin never sets it): a page of a listed origin may read the refusal.
        return origin_listed_on_any_key(origin)

    @staticmethod
    def _preflight(origin: str) -> HttpResponse:
        if not origin_listed_on_any_key(origin):
            response = error_response(
                403, "origin_not_allowed", f"The origin {origin} is not listed on any publishable key."
            )
        else:
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Origin"] = origin
            response["Access-Control-Allow-Methods"] = "GET, POST"
            response["Access-Control-Allow-Headers"] = "Authorization, Content-Type"
            response["Access-Control-Max-Age"] = "600"
        patch_vary_headers(response, ["Origin"])
        return response


class PublishableKeyAuth(HttpBearer):
    """`Authorization: Bearer cc_pub_…` from a listed origin, within the key's rate."""

    @sensitive_variables("token")
    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        api_token = token_authenticate(secret=token)
        if api_token is None:
            return None
        if api_token.kind != TokenKind.PUBLISHABLE:
            # An application token in a browser is the leak this API exists to avoid.
            raise PermissionDeniedError(
                "The embed API takes a publishable key (cc_pub_…), not an application or personal token.",
                code="publishable_key_required",
            )
        origin = request.headers.get("Origin")
        if origin is not None and origin not in api_token.origins:
            raise PermissionDeniedError(
                f"This key may not be used from {origin}: add the origin to the key.",
                code="origin_not_allowed",
                fields={"Origin": "not one of the key's origins"},
            )
        request.embed_token = api_token
        rate_limit_hit(scope="key", ident=str(api_token.pk), limit=settings.EMBED_RATE_PER_KEY,
                       what="with this key")
        return Principal(kind="publishable", token=api_token, application=api_token.application)


publishable_auth = PublishableKeyAuth()
