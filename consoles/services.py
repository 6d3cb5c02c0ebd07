"""Writes for tenants, memberships and tokens. Keyword-only, one transaction each."""

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from . import rowsql
from .errors import Conflict, InvalidInput, NotFound
from .models import ApiToken, Application, Membership, Role, TokenKind
from .origins import origins_clean
from .tokens import token_digest, token_display_prefix, token_generate

# last_used_at is advisory; writing it on every request would turn each API
# read into a write, so it is refreshed at most this often.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def _validation_fields(exc: ValidationError) -> dict[str, str]:
    if hasattr(exc, "error_dict"):
        return {field: " ".join(m for e in errors for m in e.messages) for field, errors in exc.error_dict.items()}
    return {"__all__": " ".join(exc.messages)}


def application_create(*, slug: str, name: str = "", **settings_fields) -> Application:
    # A name of spaces would show as nothing in every list: it is no name, so the slug stands in.
    application = Application(slug=slug, name=(name or "").strip() or slug, **settings_fields)
    try:
        application.full_clean(validate_unique=False)
    except ValidationError as exc:
        fields = _validation_fields(exc)
        raise InvalidInput("; ".join(f"{k}: {v}" for k, v in fields.items()), fields=fields) from exc
    try:
        with transaction.atomic():
            application.save()
    except IntegrityError as exc:
        raise Conflict(f"An application with slug {slug!r} already exists.", code="duplicate") from exc
    return application


def membership_set(*, application: Application, user: AbstractBaseUser, role: str) -> Membership:
    """Add `user` to `application` with `role`, or change the role of an existing member."""
    if role not in Role.values:
        raise InvalidInput(
            f"Unknown role {role!r}; use one of {', '.join(Role.values)}.", fields={"role": "invalid"}
        )
    with transaction.atomic():
        membership, _ = Membership.objects.update_or_create(
            user=user, application=application, defaults={"role": role}
        )
    return membership


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once, never stored


def token_issue(
    *,
    name: str,
    application: Application | None = None,
    user: AbstractBaseUser | None = None,
    created_by: AbstractBaseUser | None = None,
    publishable: bool = False,
    origins: list[str] | None = None,
) -> IssuedToken:
    """Issue an application token (`application=`), a personal token (`user=`), or a
    publishable key for the flag widget (`application=`, `publishable=True` and the
    `origins` whose pages may use it)."""
    if (application is None) == (user is None):
        raise InvalidInput("Give exactly one owner: an application or a user.")
    if publishable and application is None:
        raise InvalidInput("A publishable key belongs to an application.", fields={"application": "required"})
    if origins and not publishable:
        raise InvalidInput("Only a publishable key lists origins.", fields={"origins": "only for publishable keys"})
    origins = origins_clean(origins or []) if publishable else []
    if not name.strip():
        raise InvalidInput("A token needs a name.", fields={"name": "required"})
    limit = ApiToken._meta.get_field("name").max_length
    if len(name.strip()) > limit:
        # SQLite would store it whole and PostgreSQL refuse it mid-insert (a traceback).
        raise InvalidInput(f"A token name has at most {limit} characters.", fields={"name": "too long"})
    if publishable:
        kind = TokenKind.PUBLISHABLE
    else:
        kind = TokenKind.APPLICATION if application is not None else TokenKind.PERSONAL
    secret = token_generate(kind)
    with transaction.atomic():
        token = ApiToken.objects.create(
            kind=kind,
            name=name.strip(),
            application=application,
            user=user,
            prefix=token_display_prefix(secret),
            digest=token_digest(secret),
            created_by=created_by,
            origins=origins,
        )
    return IssuedToken(token=token, secret=secret)


def token_revoke(*, token: ApiToken) -> ApiToken:
    with transaction.atomic():
        ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


_TOKEN_SQL: dict[str, str] = {}  # per database vendor: built once


def _token_sql(token_cols, app_cols) -> str:
    quote = connection.ops.quote_name
    # Only quoted identifiers from the models' metadata are interpolated; the digest is bound.
    return (
        f"SELECT {token_cols.columns}, {app_cols.columns} FROM {quote(ApiToken._meta.db_table)} t "  # noqa: S608
        f"LEFT JOIN {quote(Application._meta.db_table)} a "
        f"ON a.{quote(Application._meta.pk.column)} = t.{quote(ApiToken._meta.get_field('application').column)} "
        "WHERE t.digest = %s AND t.revoked_at IS NULL"
    )


@sensitive_variables("secret")  # a debug error page or error report never shows the token
def token_authenticate(*, secret: str) -> ApiToken | None:
    """The active token with this secret (with its application), or None (unknown or revoked).

    Every API request starts here, so this is the hot path of ingest: the token
    and its application come back in one statement built once (`rowsql`), not a
    queryset Django would compile per call. They are read fresh on every
    request: a revoked token or a changed capture setting takes effect at once,
    on every server.
    """
    if not secret or len(secret) > 200:
        return None
    token_cols = rowsql.read_plan(ApiToken, "t")
    app_cols = rowsql.read_plan(Application, "a")
    sql = _TOKEN_SQL.get(connection.vendor) or _TOKEN_SQL.setdefault(connection.vendor, _token_sql(token_cols, app_cols))
    with rowsql.prepared_cursor() as cursor:
        cursor.execute(sql, [token_digest(secret)])
        row = cursor.fetchone()
    if row is None:
        return None
    split = len(token_cols.attnames)
    token = rowsql.instance_from(ApiToken, token_cols, row[:split])
    if token.user_id is not None and not token.user.is_active:
        return None
    if token.application_id is not None:
        # A personal token has no application; its user's memberships decide.
        token.application = rowsql.instance_from(Application, app_cols, row[split:])
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def user_get_by_username(*, username: str) -> AbstractBaseUser:
    User = get_user_model()
    try:
        return User.objects.get(username=username)
    except User.DoesNotExist as exc:
        raise NotFound(f"Unknown user {username!r}.") from exc
