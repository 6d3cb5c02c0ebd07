"""Browser test of the API docs page: the vendored Swagger UI renders our schema."""

from playwright.sync_api import expect


def test_the_docs_page_renders_every_operation_without_a_schema_error(page, transactional_db):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto("/api/docs")
    expect(page.get_by_role("heading", name="Curator console API")).to_be_visible()
    for method, path in (("POST", "/api/v1/flags"), ("GET", "/api/v1/flags/export"), ("POST", "/api/v1/score")):
        expect(page.locator(f".opblock-summary:has(.opblock-summary-method:text-is('{method}'))"
                            f":has(.opblock-summary-path[data-path='{path}'])")).to_be_visible()
    expect(page.locator(".errors-wrapper")).to_have_count(0)
    assert errors == []
