import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.models import WorkerHost
from runs.services import worker_host_authenticate

pytestmark = pytest.mark.django_db


def test_ensure_admin_creates_one_admin_with_a_generated_password_printed_once(monkeypatch, settings, tmp_path):
    settings.DATA_DIR = tmp_path  # the generated password is kept there: not in this checkout's data folder
    monkeypatch.delenv("KSEEK_ADMIN_PASSWORD", raising=False)
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    password = out.getvalue().split("password: ")[1].split()[0]
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.check_password(password)
    again = io.StringIO()
    call_command("ensure_admin", stdout=again)
    assert "exists already" in again.getvalue() and password not in again.getvalue()
    assert get_user_model().objects.filter(is_superuser=True).count() == 1


def test_ensure_admin_takes_the_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("KSEEK_ADMIN_PASSWORD", "correct-horse-battery")
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    assert "correct-horse-battery" not in out.getvalue()
    assert get_user_model().objects.get(username="admin").check_password("correct-horse-battery")


def test_worker_token_prints_a_token_that_authenticates_until_revoked():
    out = io.StringIO()
    call_command("worker_token", "gpu-node-1", "--gpus", "NVIDIA H200", stdout=out)
    token = out.getvalue().strip().splitlines()[-1]
    assert worker_host_authenticate(token).name == "gpu-node-1"
    assert WorkerHost.objects.get().gpus == ["NVIDIA H200"]
    with pytest.raises(CommandError, match="exists"):
        call_command("worker_token", "gpu-node-1", stdout=io.StringIO())
    call_command("worker_token", "gpu-node-1", "--revoke", stdout=io.StringIO())
    assert worker_host_authenticate(token) is None
    # A revoked host comes back with a new token; the old one stays dead.
    out = io.StringIO()
    call_command("worker_token", "gpu-node-1", "--rotate", stdout=out)
    new_token = out.getvalue().strip().splitlines()[-1]
    assert worker_host_authenticate(new_token).name == "gpu-node-1" and worker_host_authenticate(token) is None


def test_bootstrap_is_idempotent(monkeypatch):
    monkeypatch.setenv("KSEEK_ADMIN_PASSWORD", "correct-horse-battery")
    call_command("bootstrap", stdout=io.StringIO())
    call_command("bootstrap", stdout=io.StringIO())
    assert get_user_model().objects.filter(is_superuser=True).count() == 1
