"""Writes for tenants, memberships and tokens. Keyword-only, one transaction each."""

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from .errors import Conflict, InvalidInput, NotFound
from .extensions import vocabulary_in_use
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


def application_keys_in_use(*, application: Application) -> None:
    """Refuse to remove a key that stored rows use (a flag's axis or problem, a
    capture's or a case's label): the rows would name a key the console no longer
    offers, and a re-opened flag could not be approved as it was. The same rule as
    Label Studio's for labels in use; a key can still be added, or its wording (a
    problem's label) changed.

    `application` holds the edited, not yet saved, lists (already through
    `full_clean`); they are compared with the stored row. Which rows use a key is
    asked of the apps that store them (`consoles.extensions.vocabulary_in_use`),
    so the model itself reads no other app. Raises InvalidInput naming each field.
    """
    if application.pk is None:
        return
    stored = Application.objects.filter(pk=application.pk).values(*Application.VOCABULARIES).first()
    if stored is None:
        return
    errors = {}
    for field, keys_of in Application.VOCABULARIES.items():
        removed = keys_of(stored[field]) - keys_of(getattr(application, field))
        if in_use := vocabulary_in_use(application, field, removed):
            used = "; ".join(f"{key!r} by {' and '.join(what)}" for key, what in sorted(in_use.items()))
            errors[field] = f"Still used, so it cannot be removed: {used}."
    if errors:
        raise InvalidInput("; ".join(f"{k}: {v}" for k, v in errors.items()), fields=errors)


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


@sensitive_variables("secret")  # a debug error page or error report never shows the token
def token_authenticate(*, secret: str) -> ApiToken | None:
    """The active token with this secret (with its application), or None (unknown or revoked).

    Every API request starts here: the token, its application and its user come
    back in one query (`select_related`). They are read fresh on every request:
    a revoked token or a changed capture setting takes effect at once, on every
    server.
    """
    if not secret or len(secret) > 200:
        return None
    try:
        # get(), not first(): the digest is unique, and first() would order by the
        # model's ordering, a sort the ORM compiles on every request for one row.
        token = ApiToken.objects.select_related("application", "user").get(
            digest=token_digest(secret), revoked_at__isnull=True)
    except ApiToken.DoesNotExist:
        return None
    if token.user_id is not None and not token.user.is_active:
        return None
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
