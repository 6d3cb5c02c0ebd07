"""Test helpers the apps share, notably the tenant-isolation pattern:

    def test_case_page_is_sealed(client, tenant_pair):
        case = CaseFactory(application=tenant_pair.b)
        assert_sealed(client, tenant_pair.member_of_a, reverse("adjudication:case", args=[tenant_pair.b.slug, case.pk]))

A member of application A gets 404, never 403 or data, for anything of B,
through pages (`assert_sealed`) and the API (`assert_api_sealed`).
"""

from dataclasses import dataclass

from django.test import Client

from .models import Application


@dataclass
class TenantPair:
    a: Application
    b: Application
    member_of_a: object  # a curator of A, not a member of B
    member_of_b: object
    token_a: str  # application token secrets
    token_b: str


def assert_sealed(client: Client, user, url: str, method: str = "get", data: dict | None = None) -> None:
    client.force_login(user)
    response = getattr(client, method)(url, data or {})
    assert response.status_code == 404, f"{method.upper()} {url} gave {response.status_code}, expected 404"


def assert_api_sealed(client: Client, token: str, url: str, method: str = "get", json: dict | None = None) -> None:
    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if method == "get":
        response = client.get(url, **kwargs)
    else:
        response = getattr(client, method)(url, data=json or {}, content_type="application/json", **kwargs)
    assert response.status_code == 404, f"{method.upper()} {url} gave {response.status_code}, expected 404"
    assert response.json()["error"]["code"] == "not_found"


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


# --- Sweeps: every route of the project, found by walking the URL resolver -------


@dataclass(frozen=True)
class Route:
    """One URL pattern: `route` as written (`a/<slug:app_slug>/flags/<str:public_id>/`),
    the namespace of its include (`feedback`), its name and its URL arguments."""

    route: str
    namespace: str
    name: str
    kwargs: tuple[str, ...]

    @property
    def application_scoped(self) -> bool:
        return self.route.startswith("a/<slug:app_slug>/")

    def url(self, values: dict[str, object]) -> str:
        import re

        def fill(match: "re.Match[str]") -> str:
            return str(values[match.group(2)])

        return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", fill, self.route)


def url_routes() -> list[Route]:
    """Every URL pattern of the project (admin and API included), sorted."""
    import re

    from django.urls import URLPattern, URLResolver, get_resolver

    found: list[Route] = []

    def walk(resolver: URLResolver, prefix: str, namespace: str) -> None:
        for pattern in resolver.url_patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern, route, pattern.namespace or namespace)
            elif isinstance(pattern, URLPattern):
                kwargs = tuple(m.group(2) for m in re.finditer(r"<(?:(\w+):)?(\w+)>", route))
                found.append(Route(route, namespace, pattern.name or "", kwargs))

    walk(get_resolver(), "", "")
    return sorted(set(found), key=lambda r: r.route)


def api_operations() -> list[tuple[str, str, dict]]:
    """Every operation of the JSON API as (method, path, OpenAPI operation), from its schema."""
    from .api import api

    schema = api.get_openapi_schema()
    return sorted(
        (method.upper(), path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    )
