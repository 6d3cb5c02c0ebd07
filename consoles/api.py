"""The JSON API: one NinjaAPI (OpenAPI schema at /api/openapi.json, docs at
/api/docs, served from vendored assets), its authentication, and the error
shape every endpoint shares:

    {"error": {"code": "...", "message": "...", "fields": {"field": "why"}}}

Apps add their routers in `consoles/urls.py`; endpoints stay thin (parse ->
service/selector -> serialise) and raise `consoles.errors.DomainError`s.
"""

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.utils.csp import CSP
from django.utils.decorators import method_decorator
from django.views.decorators.csp import csp_override
from django.views.decorators.debug import sensitive_variables
from ninja import Field, NinjaAPI, Query, Schema
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder
from ninja.security import APIKeyCookie, HttpBearer
from pydantic import create_model

from .access import Principal
from .errors import DomainError, PermissionDeniedError, RateLimited
from .pagination import Page
from .services import token_authenticate
from .timestamps import iso_utc


class BearerTokenAuth(HttpBearer):
    """`Authorization: Bearer <token>`: an application token or a personal token."""

    @method_decorator(sensitive_variables("token"))
    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        api_token = token_authenticate(secret=token)
        if api_token is None:
            return None
        if api_token.kind == "publishable":
            # It sits in web pages: the embed API (consoles.embed) is all it may call.
            raise PermissionDeniedError(
                "A publishable key (cc_pub_…) may only be used on the embed API (/api/v1/embed/…).",
                code="publishable_key_not_allowed",
            )
        if api_token.kind == "application":
            return Principal(kind="application", token=api_token, application=api_token.application)
        return Principal(kind="personal", token=api_token, user=api_token.user)


class SessionPrincipalAuth(APIKeyCookie):
    """A logged-in browser session (CSRF checked on unsafe methods)."""

    param_name = settings.SESSION_COOKIE_NAME

    def _get_key(self, request: HttpRequest) -> str | None:
        # CSRF guards the cookie a browser sends on its own. Without a session cookie there
        # is nothing to forge: the request is unauthenticated (401), not a CSRF failure (a
        # 403 that told an integration with a revoked token it lacked a role).
        if self.param_name not in request.COOKIES:
            return None
        return super()._get_key(request)

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


class UnsupportedMediaType(Exception):
    """A request body that is not JSON (the parser's refusal, answered as 415)."""


class JsonBodyParser(Parser):
    """Bodies are JSON and say so: `text/plain` or a form post is 415, not read as
    JSON anyway (a form-encoded body used to be parsed as JSON when it happened to be)."""

    def parse_body(self, request: HttpRequest) -> Any:
        media_type = (request.content_type or "").lower()
        if media_type != "application/json" and not media_type.endswith("+json"):
            raise UnsupportedMediaType(media_type or "none")
        return super().parse_body(request)


class TimestampEncoder(NinjaJSONEncoder):
    """Every timestamp the API writes has one shape, the exports' own:
    `2026-06-26T10:14:33+00:00` (UTC, whole seconds, an explicit offset)."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime):
            return iso_utc(o)
        return super().default(o)


class ConsoleRenderer(JSONRenderer):
    encoder_class = TimestampEncoder


api = NinjaAPI(
    title="Curator console API",
    version="1",
    description=(
        "Flags, captures, cases and teaching candidates in; reviewed ground truth out.\n\n"
        "Authenticate with `Authorization: Bearer <token>` (an application token for "
        "integrations and agents, a personal token for a human), or a browser session. "
        "Each operation says which of these may call it. Request bodies are JSON "
        "(`Content-Type: application/json`, else 415); bodies over "
        f"{settings.API_MAX_BODY_BYTES} bytes are refused with 413.\n\n"
        'Every error is `{"error": {"code", "message", "fields"}}`: 400 malformed JSON, '
        "401 missing or unknown token, 403 not allowed (role, or a human-only action), "
        "404 not found (also anything of an application you are not a member of), "
        "405 method not allowed, 409 conflict, 413 too large, 415 not JSON, "
        "422 invalid input with `fields` naming each field (body, query or path). Text never "
        "holds NUL (U+0000): 422 naming the field; identifiers and claims must not be blank.\n\n"
        "Timestamps are ISO 8601 in UTC with an explicit offset: `2026-06-26T10:14:33+00:00`. "
        "Days (`created_from`, `created_to`) are `YYYY-MM-DD`, inclusive."
    ),
    auth=AUTH_ANY,
    urls_namespace="api",
    openapi_url="/openapi.json",
    docs_url="/docs",
    docs_decorator=csp_override(_DOCS_CSP),
    parser=JsonBodyParser(),
    renderer=ConsoleRenderer(),
)


class ErrorBody(Schema):
    code: str = Field(description="A stable machine-readable code, e.g. `validation_error`, `not_found`, `conflict`.")
    message: str = Field(description="One sentence for a person.")
    fields: dict[str, str] = Field(
        description="Field name (dotted for nested body fields, e.g. `cases.3.evidence.0.relation`) -> why "
        "it was refused; empty when no single field is to blame."
    )
    current: dict | None = Field(
        None, description="On a 409 only: the current state of what you tried to change."
    )


class ErrorOut(Schema):
    error: ErrorBody = Field(description="What was refused and why; nothing was written.")


# The refusals every operation may answer, for its `response=`: 413 comes from
# ApiBodyLimitMiddleware before the operation runs, so the schema is the only
# place a client learns of it.
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 413: ErrorOut, 422: ErrorOut}
# ... and those that take a body: a body that is not JSON is 415 (JsonBodyParser).
WRITE_ERRORS = {**ERRORS, 415: ErrorOut}


# Every list that can grow without bound pages the same way (consoles.pagination):
# `cursor` in, `items` with `next_cursor` and `previous_cursor` out, no total.
CURSOR_DESCRIPTION = "`next_cursor` or `previous_cursor` of a page of this list."
CURSOR_QUERY = Query(None, description=CURSOR_DESCRIPTION)


def page_schema(name: str, item: type, noun: str) -> type[Schema]:
    """The schema of a page of `item`s, named `name` in the OpenAPI document."""
    return create_model(
        name,
        __base__=Schema,
        __module__=item.__module__,
        items=(list[item], Field(description=f"At most `limit` {noun}.")),
        next_cursor=(str | None, Field(description="Pass as `cursor` for the next page; null on the last page.")),
        previous_cursor=(str | None, Field(description="Pass as `cursor` for the page before; null on the first page.")),
    )


def page_out(page: Page, item: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """A page's answer, each row through `item` (or as it is, for a schema that reads its fields)."""
    items = page.items if item is None else [item(row) for row in page.items]
    return {"items": items, "next_cursor": page.next_cursor, "previous_cursor": page.previous_cursor}


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


# Errors that refuse the body as a whole rather than a field of it.
_NOT_AN_OBJECT = {"missing", "model_type", "model_attributes_type", "dict_type"}


def schema_error_fields(errors: list[dict[str, Any]], *, whole: str = "The body must be a JSON object.") -> dict[str, str]:
    """Field name -> why, from pydantic's (or ninja's) validation errors: what every
    422 of a schema says, and what each refused item of a batch says."""
    fields: dict[str, str] = {}
    for err in errors:
        loc = tuple(err.get("loc", ()))
        if (len(loc) == 2 and loc[0] == "body" or not loc) and err.get("type") in _NOT_AN_OBJECT:
            # The body as a whole (empty, a list, a string): ninja names it after the view's
            # parameter ("payload") and the model ("FlagIn"), names no client has seen.
            fields["__all__"] = whole
            continue
        name = _field_name(loc)
        fields[name] = f"{fields[name]}; {err['msg']}" if name in fields else err["msg"]
    return fields


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return error_response(422, "validation_error", "The request does not match the schema.",
                          schema_error_fields(exc.errors))


@api.exception_handler(DomainError)
def _domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    return JsonResponse(exc.as_dict(), status=exc.status)


@api.exception_handler(RateLimited)
def _rate_limited(request: HttpRequest, exc: RateLimited) -> HttpResponse:
    response = JsonResponse(exc.as_dict(), status=exc.status)
    response["Retry-After"] = str(exc.retry_after)
    return response


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
    if isinstance(exc.__cause__, UnsupportedMediaType):
        # ninja wraps every parser failure in a 400; this one is the client's media type.
        return error_response(
            415, "unsupported_media_type",
            f"The body must be JSON (Content-Type: application/json), not {exc.__cause__}.",
        )
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


class ApiErrorShapeMiddleware:
    """Under /api/, a method an endpoint does not take (HEAD, OPTIONS, PUT, ...) and an
    unknown path answer with the error shape like every other refusal, not Django's
    HTML: a client parses one body shape whatever went wrong."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path_info.startswith("/api/") or response.get("Content-Type", "").startswith(
            "application/json"
        ):
            return response
        if isinstance(response, HttpResponseNotAllowed):
            refusal = error_response(
                405, "method_not_allowed", f"{request.method} is not allowed here; use {response['Allow']}."
            )
            refusal["Allow"] = response["Allow"]
            return refusal
        if response.status_code == 404:
            return error_response(404, "not_found", "No such API endpoint.")
        return response


class ApplicationRoleOut(Schema):
    slug: str = Field(description="The application's slug: pass it as `application_id`.")
    role: str = Field(description="`integration` for an application token; else the member's role: "
                      "`viewer`, `curator` or `admin`.")


class MeOut(Schema):
    kind: Literal["application", "personal", "session"] = Field(
        description="`application` (an application token), `personal` (a person's token) or `session`."
    )
    name: str = Field(description="The token's name (application tokens) or the person's username.")
    applications: list[ApplicationRoleOut] = Field(description="The applications this caller may act on.")


@api.get("/v1/me", response={200: MeOut, **ERRORS}, tags=["access"], summary="Who this token or session is")
def me(request: HttpRequest) -> dict:
    """Check a token: its kind and the applications it may act on, with the role on each.
    Any caller: an application token, a personal token or a session."""
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
