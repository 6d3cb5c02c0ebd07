from playwright.sync_api import expect

from .conftest import PASSWORD, login


def test_log_in_switch_application_and_log_out(page, two_apps):
    login(page, "cora")
    expect(page.get_by_role("heading", name="Your applications")).to_be_visible()
    expect(page.get_by_role("link", name="Initech secret")).to_have_count(0)

    page.get_by_role("main").get_by_role("link", name="Acme assistant").click()
    expect(page.get_by_role("heading", name="Acme assistant")).to_be_visible()

    switcher = page.get_by_test_id("app-switcher")
    switcher.locator("summary").click()
    expect(switcher.get_by_role("link")).to_have_count(2)
    switcher.get_by_role("link", name="Globex verifier").click()
    expect(page.get_by_role("heading", name="Globex verifier")).to_be_visible()
    assert page.url.endswith("/a/globex/")

    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.goto("/a/acme/")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()


def test_wrong_password_shows_an_error(page, two_apps):
    login(page, "cora", "wrong")
    expect(page.get_by_role("alert")).to_contain_text("correct username and password")


def test_the_console_is_keyboard_reachable(page, two_apps):
    login(page, "cora")
    # Wait for the page after login: a Tab pressed mid-navigation focuses the old page.
    expect(page.get_by_role("heading", name="Your applications")).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()


def test_no_csp_violations_on_the_pages(page, two_apps):
    violations = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    login(page, "cora")
    page.goto("/a/acme/")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("typeof window.htmx") == "object"
    assert violations == []


def test_every_section_link_is_on_screen_on_a_phone(new_page, two_apps):
    page = new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, "cora")
    page.goto("/a/acme/flags/")
    links = page.locator(".sections a")
    expect(links).to_have_count(6)
    for i in range(6):
        box = links.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, links.nth(i).inner_text()


def test_a_filter_after_the_session_ended_shows_the_login_page_then_returns(new_page, two_apps):
    page = new_page()
    login(page, "cora")
    page.goto("/a/acme/flags/?status=pending")
    page.context.clear_cookies(name="sessionid")  # the session ends (expiry, logout in another tab)
    page.get_by_label("Status").select_option("approved")  # an htmx request
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    expect(page.get_by_role("heading", name="Flags")).to_have_count(0)  # a whole page, not swapped into the table
    page.get_by_label("Username").fill("cora")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Flags")).to_be_visible()
    assert page.url.endswith("/a/acme/flags/?status=pending")
