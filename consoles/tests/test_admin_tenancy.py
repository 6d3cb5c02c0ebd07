"""The Django admin is a tenant surface too (issue 30, item 1).

First the attacks of the security review, replayed as a staff user who is admin of
application A only, with every model permission there is (more than the README's setup
gives, so nothing below rests on a missing permission). Then the sweep: every ModelAdmin
registered in `admin.site._registry` (and its inlines) must carry the tenant mixin, and
its changelist, list filters, search, change, history, delete, add, autocomplete and
actions give nothing of another application and accept none of its ids.
"""

import io
import re

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.db import models
from django.urls import reverse

from consoles.admin_scope import is_scoped
from consoles.management.commands.load_demo import DEMO_TOKEN_SECRETS
from consoles.models import ApiToken, Application, Membership, Role, TokenKind
from consoles.testing import bearer
from consoles.tests.factories import (
    ApplicationFactory,
    MembershipFactory,
    UserFactory,
    application_token,
    personal_token,
)
from feedback.models import Flag
from feedback.tests.factories import FlagFactory

pytestmark = pytest.mark.django_db

User = get_user_model()


def _staff_admin_of(application: Application, username: str = "ada") -> User:
    user = UserFactory(username=username, is_staff=True)
    user.user_permissions.set(Permission.objects.all())
    MembershipFactory(user=user, application=application, role=Role.ADMIN)
    return user


@pytest.fixture
def tenants(db) -> dict:
    a = ApplicationFactory(slug="tenant-a", name="Alpha assistant")
    b = ApplicationFactory(slug="tenant-b", name="Bravo verifier")
    ada = _staff_admin_of(a)
    curator_b = MembershipFactory(user=UserFactory(username="bea"), application=b, role=Role.CURATOR).user
    both = UserFactory(username="cy")  # a curator of both applications
    MembershipFactory(user=both, application=a, role=Role.CURATOR)
    MembershipFactory(user=both, application=b, role=Role.CURATOR)
    return {
        "a": a, "b": b, "ada": ada, "curator_b": curator_b, "both": both,
        "flag_a": FlagFactory(application=a), "flag_b": FlagFactory(application=b),
        "token_a": ApiToken.objects.get(pk=_issue(a, "alpha-gateway")),
        "token_b": ApiToken.objects.get(pk=_issue(b, "bravo-gateway")),
    }


def _issue(application: Application, name: str) -> int:
    application_token(application, name=name)
    return ApiToken.objects.get(application=application, name=name).pk


@pytest.fixture
def ada(client, tenants):
    client.force_login(tenants["ada"])
    return client


# --- the attacks, replayed ------------------------------------------------------------------


def test_another_applications_flags_are_neither_listed_nor_opened(ada, tenants):
    b, flag_a, flag_b = tenants["b"], tenants["flag_a"], tenants["flag_b"]
    listing = ada.get(f"/admin/feedback/flag/?application__id__exact={b.pk}")
    assert listing.status_code == 200
    assert flag_b.public_id not in listing.text and b.name not in listing.text
    own = ada.get("/admin/feedback/flag/")
    assert flag_a.public_id in own.text and flag_b.public_id not in own.text
    # The list filter offers A alone, not every tenant's name.
    assert tenants["a"].name in own.text and b.name not in own.text
    assert ada.get(f"/admin/feedback/flag/{flag_b.pk}/change/").status_code == 404
    assert ada.get(f"/admin/feedback/flag/{flag_a.pk}/change/").status_code == 200


def test_another_applications_tokens_and_memberships_are_not_readable(ada, tenants):
    tokens = ada.get("/admin/consoles/apitoken/")
    assert "alpha-gateway" in tokens.text and "bravo-gateway" not in tokens.text
    assert ada.get(f"/admin/consoles/apitoken/{tenants['token_b'].pk}/change/").status_code == 404
    memberships = ada.get("/admin/consoles/membership/")
    assert memberships.status_code == 200
    assert "bea" not in memberships.text and "tenant-b" not in memberships.text
    foreign = Membership.objects.get(user=tenants["curator_b"])
    assert ada.get(f"/admin/consoles/membership/{foreign.pk}/change/").status_code == 404
    applications = ada.get("/admin/consoles/application/")
    assert "Alpha assistant" in applications.text and "Bravo verifier" not in applications.text


def test_a_staff_admin_cannot_make_themselves_admin_of_another_application(ada, tenants):
    ada_user, b = tenants["ada"], tenants["b"]
    response = ada.post("/admin/consoles/membership/add/",
                        {"user": ada_user.pk, "application": b.pk, "role": Role.ADMIN})
    assert response.status_code == 200
    assert "application" in response.context["adminform"].form.errors
    # Moving their own membership of A over to B is refused the same way.
    own = Membership.objects.get(user=ada_user, application=tenants["a"])
    response = ada.post(f"/admin/consoles/membership/{own.pk}/change/",
                        {"user": ada_user.pk, "application": b.pk, "role": Role.ADMIN})
    assert response.status_code == 200 and "application" in response.context["adminform"].form.errors
    assert not Membership.objects.filter(user=ada_user, application=b).exists()
    # The autocomplete the form uses does not offer B either.
    found = ada.get("/admin/autocomplete/", {"app_label": "consoles", "model_name": "membership",
                                              "field_name": "application", "term": ""}).json()
    assert [r["id"] for r in found["results"]] == [str(tenants["a"].pk)]


@pytest.mark.parametrize("victim", ["curator_b", "both"])
def test_no_admin_mints_a_personal_token_for_another_human(ada, tenants, victim):
    """The review showed the minted token then reviewing B's flags as the curator."""
    human = tenants[victim]
    response = ada.post("/admin/consoles/apitoken/add/",
                        {"kind": TokenKind.PERSONAL, "name": "pose", "user": human.pk, "application": ""})
    assert response.status_code == 200
    assert "kind" in response.context["adminform"].form.errors
    assert not ApiToken.objects.filter(user=human).exists()


def test_not_even_a_superuser_mints_a_personal_token_in_the_admin(client, tenants):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "x"))
    response = client.post("/admin/consoles/apitoken/add/",
                           {"kind": TokenKind.PERSONAL, "name": "pose", "user": tenants["curator_b"].pk})
    assert response.status_code == 200 and "kind" in response.context["adminform"].form.errors
    assert not ApiToken.objects.filter(kind=TokenKind.PERSONAL).exists()


def test_an_application_token_for_another_application_is_refused(ada, tenants):
    before = ApiToken.objects.count()
    response = ada.post("/admin/consoles/apitoken/add/",
                        {"kind": TokenKind.APPLICATION, "name": "sneaky", "application": tenants["b"].pk})
    assert response.status_code == 200 and "application" in response.context["adminform"].form.errors
    assert ApiToken.objects.count() == before


def test_a_new_tokens_secret_is_on_the_response_page_only(ada, client, tenants):
    response = ada.post("/admin/consoles/apitoken/add/",
                        {"kind": TokenKind.APPLICATION, "name": "new-gateway", "application": tenants["a"].pk})
    assert response.status_code == 200
    secret = re.search(r'data-testid="token-secret">([^<]+)<', response.text).group(1)
    assert secret.startswith("cc_app_")
    assert "no-store" in response["Cache-Control"]
    # Not in the messages cookie, nor the session: a later page shows no trace of it.
    assert all(secret not in morsel.value for morsel in response.cookies.values())
    assert all(secret not in str(value) for value in ada.session.values())
    assert secret not in ada.get("/admin/consoles/apitoken/").text
    token = ApiToken.objects.get(name="new-gateway")
    assert token.kind == TokenKind.APPLICATION and token.application == tenants["a"]
    assert token.created_by == tenants["ada"]
    client.logout()
    me = client.get("/api/v1/me", **bearer(secret))
    assert me.status_code == 200 and me.json()["applications"] == [{"slug": "tenant-a", "role": "integration"}]


def test_an_admin_revokes_a_members_personal_token_but_cannot_see_an_outsiders(ada, tenants):
    personal_token(tenants["both"], name="cy-laptop")
    personal_token(tenants["curator_b"], name="bea-laptop")
    mine, theirs = (ApiToken.objects.get(name=n) for n in ("cy-laptop", "bea-laptop"))
    listing = ada.get("/admin/consoles/apitoken/")
    assert "cy-laptop" in listing.text and "bea-laptop" not in listing.text
    # Seen, not renamed: the token is its user's.
    assert ada.post(f"/admin/consoles/apitoken/{mine.pk}/change/", {"name": "renamed"}).status_code == 403
    ada.post("/admin/consoles/apitoken/", {"action": "revoke_tokens", "_selected_action": [mine.pk, theirs.pk]})
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.revoked_at is not None and mine.name == "cy-laptop"
    assert theirs.revoked_at is None


def test_an_application_admin_reads_their_members_but_changes_no_user(ada, tenants):
    both, outsider = tenants["both"], tenants["curator_b"]
    users = ada.get("/admin/auth/user/")
    assert ">cy<" in users.text and ">bea<" not in users.text
    assert ada.get(f"/admin/auth/user/{both.pk}/change/").status_code == 200
    assert ada.get(f"/admin/auth/user/{outsider.pk}/change/").status_code == 404
    # A password or superuser flag set here would reach the user's other applications.
    response = ada.post(f"/admin/auth/user/{both.pk}/password/", {"password1": "Hijack-2026!x", "password2": "Hijack-2026!x"})
    assert response.status_code == 403
    response = ada.post(f"/admin/auth/user/{both.pk}/change/", {"username": "cy", "is_superuser": "on"})
    assert response.status_code == 403
    both.refresh_from_db()
    assert not both.is_superuser and both.check_password("pw-for-tests-1")
    assert ada.get("/admin/auth/user/add/").status_code == 403


def test_tenants_are_a_superusers_to_create_and_delete(ada, tenants):
    assert ada.get("/admin/consoles/application/add/").status_code == 403
    assert ada.post(f"/admin/consoles/application/{tenants['a'].pk}/delete/", {"post": "yes"}).status_code == 403
    assert Application.objects.filter(pk=tenants["a"].pk).exists()


def test_a_staff_user_who_administers_nothing_sees_nothing(client, tenants):
    curator = UserFactory(username="stafford", is_staff=True)
    curator.user_permissions.set(Permission.objects.all())
    MembershipFactory(user=curator, application=tenants["a"], role=Role.CURATOR)
    client.force_login(curator)
    assert client.get("/admin/").context["available_apps"] == []
    assert client.get("/admin/feedback/flag/").status_code == 403


def test_a_superuser_sees_every_application(client, tenants):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "x"))
    listing = client.get("/admin/feedback/flag/")
    assert tenants["flag_a"].public_id in listing.text and tenants["flag_b"].public_id in listing.text
    assert client.get(f"/admin/feedback/flag/{tenants['flag_b'].pk}/change/").status_code == 200
    assert client.get(f"/admin/consoles/apitoken/{tenants['token_b'].pk}/change/").status_code == 200


# --- the sweep: every registered ModelAdmin ---------------------------------------------------


def test_every_registered_model_admin_and_inline_is_tenant_scoped():
    unscoped = [f"{model._meta.label}: {type(model_admin).__name__}"
                for model, model_admin in admin.site._registry.items() if not is_scoped(model_admin)]
    unscoped += [f"{model._meta.label} inline {inline.__name__}"
                 for model, model_admin in admin.site._registry.items() for inline in model_admin.inlines
                 if not is_scoped(inline(model, admin.site))]
    assert unscoped == [], (
        "ModelAdmins without consoles.admin_scope.TenantScopedAdminMixin (put it first in the bases, "
        f"or wrap a library's admin with rescope()): {unscoped}"
    )


def _victim_rows(model: type[models.Model], victims: list[Application], victim_users, *,
                 strict: bool = True) -> models.QuerySet | None:
    """Another tenant's rows of `model`, found without the admin's code under test."""
    manager = model._default_manager
    if model is Application:
        return manager.filter(pk__in=[v.pk for v in victims])
    if model is User:
        return manager.filter(pk__in=[u.pk for u in victim_users])
    if model is ApiToken:
        return manager.filter(application__in=victims) | manager.filter(user__in=victim_users)
    if model is Group or model._meta.app_label == "django_tasks_database":
        return manager.all()  # superusers' only
    if model._meta.app_label == "axes":
        return manager.filter(username__in=[u.username for u in victim_users])
    if any(f.name == "application" for f in model._meta.concrete_fields):
        return manager.filter(application__in=victims)
    if not strict:  # a form's choice of rows of no tenant (permissions): not the sweep's to judge
        return None
    pytest.fail(f"The sweep cannot tell which {model._meta.label} rows belong to another application: "
                f"teach _victim_rows in {__name__}.")


@pytest.fixture
def world(db):
    """The demo applications are the victims (each app's demo loader gives them rows of its
    models); the attacker administers an application of their own."""
    call_command("load_demo", stdout=io.StringIO())
    victims = list(Application.objects.filter(slug__in=DEMO_TOKEN_SECRETS).order_by("slug"))
    attacker_app = ApplicationFactory(slug="attacker", name="Attacker app")
    attacker = _staff_admin_of(attacker_app, username="mallory")
    FlagFactory(application=attacker_app)
    victim_only = UserFactory(username="victim-only-user")
    MembershipFactory(user=victim_only, application=victims[0], role=Role.CURATOR)
    personal_token(victim_only, name="victim-only-laptop")
    Group.objects.create(name="victim-group")
    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    DBTaskResult.objects.create(  # a queued webhook delivery of the victims'
        args_kwargs={"args": [1], "kwargs": {}}, task_path="consoles.webhooks.deliver",
        queue_name="default", backend_name="default", run_after=timezone.now(),
        exception_class_path="", traceback="",
    )
    # Rows the demo has none of: made through their services, as an operator would.
    from teaching.services import corpus_supersede
    from teaching.tests.factories import CorpusEntryFactory

    owner = User.objects.get(username="admin")
    first, second = CorpusEntryFactory.create_batch(2, application=victims[0])
    corpus_supersede(application=victims[0], entry_number=first.number, superseded_by_number=second.number,
                     operator=owner)
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

    for log in (AccessAttempt, AccessLog, AccessFailureLog):
        log.objects.create(username=victim_only.username, ip_address="203.0.113.9", user_agent="ua",
                           http_accept="*/*", path_info="/login/",
                           **({"failures_since_start": 3} if log is AccessAttempt else {}))
    victim_users = list(User.objects.filter(memberships__application__in=victims)
                        .exclude(memberships__application=attacker_app).distinct())
    return {"victims": victims, "attacker": attacker, "attacker_app": attacker_app, "victim_users": victim_users}


def _object_urls(model_admin: admin.ModelAdmin, pk: object) -> list[str]:
    """Every URL of this ModelAdmin that names one object (change, delete, history, and any
    extra such as a user's password form)."""
    urls = []
    for pattern in model_admin.get_urls():
        if pattern.name and any(k in str(pattern.pattern) for k in ("<path:object_id>", "<id>", "<path:id>")):
            kwarg = "object_id" if "object_id" in str(pattern.pattern) else "id"
            urls.append(reverse(f"admin:{pattern.name}", kwargs={kwarg: pk}))
    return urls


def _markers(obj: models.Model, victims: list[Application]) -> list[str]:
    """Text of another tenant that must not appear on the attacker's pages."""
    return [v.slug for v in victims] + [v.name for v in victims] + (
        [f">{obj.get_username()}<"] if isinstance(obj, User) else [])


def test_every_model_admin_gives_an_application_admin_nothing_of_another_application(client, world):
    victims, victim_users = world["victims"], world["victim_users"]
    client.force_login(world["attacker"])
    swept = 0
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label
        rows = _victim_rows(model, victims, victim_users)
        victim = rows.order_by("pk").first()
        assert victim is not None, f"no row of {label} belongs to a victim: give the demo loader (or this fixture) one"
        before = rows.count()
        info = model._meta.app_label, model._meta.model_name
        changelist = reverse("admin:{}_{}_changelist".format(*info))
        change_url = reverse("admin:{}_{}_change".format(*info), args=[victim.pk])

        # Lists, list filters and search: none of the victim's rows, names or ids.
        queries = [{}, {"q": victims[0].slug}]
        for item in model_admin.get_list_filter(_request_for(world["attacker"])):
            name = item[0] if isinstance(item, tuple) else item
            if not isinstance(name, str):
                continue
            field = model._meta.get_field(name) if "__" not in name else None
            if field is not None and field.is_relation:
                target = _victim_rows(field.related_model, victims, victim_users).order_by("pk").first()
                if target is not None:
                    queries.append({f"{name}__{field.target_field.name}__exact": target.pk})
        for query in queries:
            response = client.get(changelist, query)
            assert response.status_code in (200, 403), (label, query, response.status_code)
            if response.status_code == 200:
                assert change_url not in response.text, (label, query, "lists a victim row")
                for marker in _markers(victim, victims):
                    if marker != query.get("q"):  # the page repeats the search term
                        assert marker not in response.text, (label, query, marker)

        # Every URL naming the victim's row: 404 (or 403 where nobody may do that at all,
        # e.g. delete a flag), for reads and writes; its page and history exactly as a missing row.
        for url in _object_urls(model_admin, victim.pk):
            for method in ("get", "post"):
                status = getattr(client, method)(url, {"post": "yes"} if method == "post" else {}).status_code
                assert status in (403, 404), (label, method, url, status)
        # (403 where the attacker may open no row of the model at all: groups.)
        expected = 404 if model_admin.has_view_or_change_permission(_request_for(world["attacker"])) else 403
        for url in (change_url, reverse("admin:{}_{}_history".format(*info), args=[victim.pk])):
            assert client.get(url).status_code in {404, expected}, (label, url)

        # Actions on the victim's id (delete, revoke, ...) touch nothing.
        for action in model_admin.get_actions(_request_for(world["attacker"])):
            client.post(changelist, {"action": action, "_selected_action": [victim.pk], "post": "yes"})

        # The add form neither offers nor accepts the victim's ids.
        add = client.get(reverse("admin:{}_{}_add".format(*info)))
        assert add.status_code in (200, 403), (label, add.status_code)
        if add.status_code == 200:
            form = add.context["adminform"].form
            for marker in _markers(victim, victims):
                assert marker not in add.text, (label, "add form", marker)
            relations = {name: field for name, field in form.fields.items() if hasattr(field, "queryset")}
            data = {}
            for name, field in relations.items():
                theirs = _victim_rows(field.queryset.model, victims, victim_users, strict=False)
                target = theirs.order_by("pk").first() if theirs is not None else None
                if target is not None:
                    data[name] = target.pk
            response = client.post(reverse("admin:{}_{}_add".format(*info)), data)
            assert response.status_code in (200, 403), (label, "add", response.status_code)
            if response.status_code == 200:
                errors = response.context["adminform"].form.errors
                assert all(name in errors for name in data), (label, "add accepted a victim's id", data, errors)

        # Autocompletes the admin's forms use offer none of the victim's rows.
        for field_name in model_admin.get_autocomplete_fields(_request_for(world["attacker"])):
            field = model._meta.get_field(field_name)
            found = client.get("/admin/autocomplete/", {"app_label": info[0], "model_name": info[1],
                                                        "field_name": field_name, "term": ""})
            if found.status_code == 200:
                offered = {r["id"] for r in found.json()["results"]}
                theirs = {str(pk) for pk in _victim_rows(field.related_model, victims, victim_users)
                          .values_list("pk", flat=True)}
                assert not offered & theirs, (label, field_name, "autocomplete offers a victim's row")

        assert rows.count() == before, f"{label}: the attacker changed the victim's rows"
        assert model._default_manager.filter(pk=victim.pk).exists(), f"{label}: the victim's row was deleted"
        swept += 1
    assert swept == len(admin.site._registry) >= 20
    assert not ApiToken.objects.filter(application__in=victims, revoked_at__isnull=False).exists()
    assert not ApiToken.objects.filter(user__in=victim_users, revoked_at__isnull=False).exists()
    assert not Membership.objects.filter(user=world["attacker"]).exclude(application=world["attacker_app"]).exists()


def test_the_sweep_pages_do_answer_the_attacker_for_their_own_application(client, world):
    """So the absences above are about the tenant, not a broken page."""
    client.force_login(world["attacker"])
    flags = client.get("/admin/feedback/flag/")
    own = Flag.objects.get(application=world["attacker_app"])
    assert flags.status_code == 200 and own.public_id in flags.text
    assert client.get(f"/admin/feedback/flag/{own.pk}/change/").status_code == 200
    assert client.get(f"/admin/consoles/application/{world['attacker_app'].pk}/change/").status_code == 200


def _request_for(user: User):
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def test_an_application_admin_manages_their_own_application(ada, tenants):
    """The scope takes nothing away inside the admin's own application."""
    a, both = tenants["a"], tenants["both"]
    page = ada.get(f"/admin/consoles/application/{a.pk}/change/")
    assert page.status_code == 200 and "cy" in page.text
    membership = Membership.objects.get(user=both, application=a)
    response = ada.post(f"/admin/consoles/membership/{membership.pk}/change/",
                        {"user": both.pk, "application": a.pk, "role": Role.VIEWER})
    assert response.status_code == 302
    membership.refresh_from_db()
    assert membership.role == Role.VIEWER
    # The member picker offers A's members, and B's curator is not among them.
    found = ada.get("/admin/autocomplete/", {"app_label": "consoles", "model_name": "membership",
                                              "field_name": "user", "term": ""}).json()
    assert {r["text"] for r in found["results"]} == {"ada", "cy"}
    token = tenants["token_a"]
    assert ada.post(f"/admin/consoles/apitoken/{token.pk}/change/", {"name": "renamed"}).status_code == 302
    token.refresh_from_db()
    assert token.name == "renamed"
    from exemplars.models import DetectorProfile

    response = ada.post("/admin/exemplars/detectorprofile/add/",
                        {"application": a.pk, "name": "alpha-profile", "axes": '["jailbreak"]',
                             "embedder": "console"})
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert DetectorProfile.objects.get(name="alpha-profile").application == a
