"""The login throttle on a real daphne behind a (simulated) proxy, on the database CI names (SQLite or PostgreSQL):
django-axes keeps its counts in that database, and an administrator's `axes_reset_username` lifts a lock."""

import re
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar

import pytest

pytestmark = pytest.mark.timeout(300)

PASSWORD = "pw-123456789"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def log_in(base: str, username: str, password: str, client_address: str) -> tuple[int, str]:
    """A browser's login through a proxy that appends `client_address` to X-Forwarded-For: (status, page)."""
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()), NoRedirect)
    headers = {"X-Forwarded-For": client_address}
    page = browser.open(urllib.request.Request(base + "/accounts/login/", headers=headers), timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token}).encode()
    request = urllib.request.Request(
        base + "/accounts/login/", data=form, headers={"Referer": base + "/accounts/login/", **headers}
    )
    try:
        with browser.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as answer:  # 302 (signed in: no redirect followed) and 429 come here
        return answer.code, answer.read().decode()


def test_wrong_passwords_lock_one_user_at_one_address_on_a_live_server_until_an_administrator_resets_it(site):
    site.session_for("olga", "operator")
    site.session_for("rita", "reviewer")
    base = f"http://127.0.0.1:{site.start_server(KSEEK_TRUSTED_PROXIES='1')}"

    answers = [log_in(base, "olga", "wrong-password", "203.0.113.5")[0] for _ in range(20)]
    assert answers[0] == 200 and answers[-1] == 429, answers
    status, page = log_in(base, "olga", PASSWORD, "203.0.113.5")
    assert status == 429 and "Login locked" in page and "15 minutes" in " ".join(page.split())

    assert log_in(base, "rita", PASSWORD, "203.0.113.5")[0] == 302  # another user at that address
    assert log_in(base, "olga", PASSWORD, "203.0.113.9")[0] == 302  # that user at another address

    site.manage("axes_reset_username", "olga")
    assert log_in(base, "olga", PASSWORD, "203.0.113.5")[0] == 302
