"""Login throttle (django-axes): wrong passwords for one username from one address lock that pair out for a while
with a page that says so; other users, other addresses and the right password after the lock are unaffected."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db

PASSWORD = "pw-123456789"


def log_in(client, username, password=PASSWORD, *, address="10.0.0.1", forwarded=None):
    headers = {"REMOTE_ADDR": address}
    if forwarded is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded
    return client.post(reverse("login"), {"username": username, "password": password}, **headers)


def logged_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == reverse("home")


def lock(client, username, **where):
    for _ in range(20):
        response = log_in(client, username, "wrong-password", **where)
    return response


def test_twenty_wrong_passwords_lock_that_user_at_that_address_out_with_a_page_saying_for_how_long(client):
    make_user("olga", "operator")
    answers = [log_in(client, "olga", "wrong-password").status_code for _ in range(20)]
    # The form's own "didn't match" answer up to the limit; locked (429) from the limit on.
    assert answers[: settings.AXES_FAILURE_LIMIT - 1] == [200] * (settings.AXES_FAILURE_LIMIT - 1)
    assert set(answers[settings.AXES_FAILURE_LIMIT :]) == {429}

    response = log_in(client, "olga")
    assert response.status_code == 429
    page = " ".join(response.content.decode().split())
    assert "Login locked" in page and "olga" in page and "locked for 15 minutes" in page
    assert "manage.py axes_reset_username olga" in page
    assert client.get(reverse("home")).status_code == 302  # not signed in


def test_a_lockout_leaves_other_users_and_other_addresses_alone(client):
    make_user("olga", "operator")
    make_user("rita", "reviewer")
    assert lock(client, "olga", address="10.0.0.1").status_code == 429
    assert logged_in(log_in(client, "rita", address="10.0.0.1"))
    client.logout()
    assert logged_in(log_in(client, "olga", address="10.0.0.2"))


def test_the_right_password_works_again_once_the_cool_off_has_passed(client):
    from axes.models import AccessAttempt

    make_user("olga", "operator")
    lock(client, "olga")
    assert log_in(client, "olga").status_code == 429
    # The clock moves on: the failures are now older than the cool-off.
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    assert logged_in(log_in(client, "olga"))


def test_an_administrator_unlocks_an_account_with_axes_reset_username(client):
    make_user("olga", "operator")
    lock(client, "olga")
    assert log_in(client, "olga").status_code == 429
    call_command("axes_reset_username", "olga")
    assert logged_in(log_in(client, "olga"))


def test_a_right_password_clears_the_count_so_occasional_typos_never_lock(client):
    make_user("olga", "operator")
    for _ in range(4):
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            assert log_in(client, "olga", "wrong-password").status_code == 200
        assert logged_in(log_in(client, "olga"))
        client.logout()


def test_the_admin_login_is_throttled_too(client):
    make_user("olga", "operator", is_staff=True)
    lock(client, "olga")
    response = client.post(reverse("admin:login"), {"username": "olga", "password": PASSWORD}, REMOTE_ADDR="10.0.0.1")
    assert response.status_code == 429


def test_without_trusted_proxies_a_forged_forwarded_for_header_changes_nothing(client):
    make_user("olga", "operator")
    for number in range(20):  # a new forged address each time
        log_in(client, "olga", "wrong-password", forwarded=f"192.0.2.{number}")
    assert log_in(client, "olga", forwarded="198.51.100.7").status_code == 429


@override_settings(KSEEK_TRUSTED_PROXIES=1)
def test_behind_a_trusted_proxy_the_address_it_appended_is_the_one_counted(client):
    make_user("olga", "operator")
    # Every request comes from the proxy (127.0.0.1); the proxy appends the client's address.
    lock(client, "olga", address="127.0.0.1", forwarded="203.0.113.5")
    assert log_in(client, "olga", address="127.0.0.1", forwarded="203.0.113.5").status_code == 429
    # An entry the client wrote itself (left of the proxy's) does not get it out.
    assert log_in(client, "olga", address="127.0.0.1", forwarded="198.51.100.1, 203.0.113.5").status_code == 429
    # Another client behind the same proxy is not locked.
    assert logged_in(log_in(client, "olga", address="127.0.0.1", forwarded="203.0.113.9"))
