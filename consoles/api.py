"""The JSON API: one NinjaAPI (OpenAPI schema at /api/openapi.json, docs at
/api/docs, served from vendored assets), its authentication, and the error
shape every endpoint shares:

    {"error": {"code": "...", "message": "...", "fields": {"field": "why"}}}

Apps add their routers in `consoles/urls.py`; endpoints stay thin (parse ->
service/selector -> serialise) and raise `consoles.errors.DomainError`s.
"""

from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.csp import CSP
from django.utils.decorators import method_decorator
from django.views.decorators.csp import csp_override
from django.views.decorators.debug import sensitive_variables
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, ValidationError
from ninja.security import APIKeyCookie, HttpBearer

from .access import Principal
from .errors import DomainError
from .services import token_authenticate


class BearerTokenAuth(HttpBearer):
    """`Authorization: Bearer <token>`: an application token or a personal token."""

    @method_decorator(sensitive_variables("token"))
    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        api_token = token_authenticate(secret=token)
        if api_token is None:
            return None
        if api_token.kind == "application":
            return Principal(kind="application", token=api_token, application=api_token.application)
        return Principal(kind="personal", token=api_token, user=api_token.user)


class SessionPrincipalAuth(APIKeyCookie):
    """A logged-in browser session (CSRF checked on unsafe methods)."""

    param_name = settings.SESSION_COOKIE_NAME

    def authenticate(self, request: HttpRequest, key: str | None) -> Principal | None:
        if request.user.is_authenticated:
            return Principal(kind="session", user=request.user)
        return None


bearer_auth = BearerTokenAuth()
session_auth = SessionPrincipalAuth()
AUTH_ANY = [bearer_auth, session_auth]

_DOCS_CSP = {
    **settings.SECURE_CSP,
    # Swagger UI sets inline style attributes; scripts stay same-origin only.
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
}

api = NinjaAPI(
    title="Curator console API",
    version="1",
    description=(
        "Flags, captures, cases and teaching candidates in; reviewed ground truth out.\n\n"
        "Authenticate with `Authorization: Bearer <token>` (an application token for "
        "integrations and agents, a personal token for a human), or a browser session. "
        f"Request bodies over {settings.API_MAX_BODY_BYTES} bytes are refused with 413. "
        'Every error is `{"error": {"code", "message", "fields"}}`.'
    ),
    auth=AUTH_ANY,
    urls_namespace="api",
    openapi_url="/openapi.json",
    docs_url="/docs",
    docs_decorator=csp_override(_DOCS_CSP),
)


class ErrorBody(Schema):
    code: str
    message: str
    fields: dict[str, str]
    current: dict | None = None


class ErrorOut(Schema):
    error: ErrorBody


# The refusals every operation may answer, for its `response=`: 413 comes from
# ApiBodyLimitMiddleware before the operation runs, so the schema is the only
# place a client learns of it.
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 413: ErrorOut, 422: ErrorOut}


def error_response(status: int, code: str, message: str, fields: dict[str, Any] | None = None) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "fields": fields or {}}}, status=status)


def _field_name(loc: list[Any] | tuple[Any, ...]) -> str:
    # ninja locates body fields as ("body", "<param>", "field", ...): keep what a client sent.
    parts = [str(p) for p in loc]
    if parts and parts[0] in {"body", "query", "path", "header", "form"}:
        parts = parts[1:]
        if len(parts) > 1 and parts[0] in {"payload", "body", "filters", "data"}:
            parts = parts[1:]
    return ".".join(parts) or "__all__"


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    fields: dict[str, str] = {}
    for err in exc.errors:
        name = _field_name(err.get("loc", ()))
        fields[name] = f"{fields[name]}; {err['msg']}" if name in fields else err["msg"]
    return error_response(422, "validation_error", "The request does not match the schema.", fields)


@api.exception_handler(DomainError)
def _domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    return JsonResponse(exc.as_dict(), status=exc.status)


@api.exception_handler(AuthenticationError)
def _authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(401, "unauthorized", "Missing, unknown or revoked token.")


@api.exception_handler(AuthorizationError)
def _authorization_error(request: HttpRequest, exc: AuthorizationError) -> HttpResponse:
    return error_response(403, "forbidden", str(exc.message))


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(404, "not_found", "Not found.")


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    codes = {400: "malformed_request", 403: "forbidden", 405: "method_not_allowed", 413: "too_large"}
    return error_response(exc.status_code, codes.get(exc.status_code, "error"), str(exc.message))


class ApiBodyLimitMiddleware:
    """Refuse API bodies over API_MAX_BODY_BYTES with 413 before anything reads them."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # path_info, not path: mounted under a prefix (SCRIPT_NAME), path starts with the prefix.
        if request.path_info.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return error_response(400, "malformed_request", "Invalid Content-Length header.")
            if length > settings.API_MAX_BODY_BYTES:
                return error_response(
                    413,
                    "too_large",
                    f"The body is {length} bytes; the limit is {settings.API_MAX_BODY_BYTES}.",
                )
        return self.get_response(request)


@api.get("/v1/me", response={200: dict, **ERRORS}, tags=["access"], summary="Who this token or session is")
def me(request: HttpRequest) -> dict:
    """Check a token: its kind and the applications it may act on."""
    principal: Principal = request.auth
    if principal.kind == "application":
        return {
            "kind": "application",
            "name": principal.token.name,
            "applications": [{"slug": principal.application.slug, "role": "integration"}],
        }
    memberships = principal.user.memberships.select_related("application").order_by("application__slug")
    return {
        "kind": principal.kind,
        "name": principal.user.get_username(),
        "applications": [{"slug": m.application.slug, "role": m.role} for m in memberships],
    }
