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
