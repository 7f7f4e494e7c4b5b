"""The generated admin password stays findable after the start-up output has scrolled away."""

import io
import re
import stat
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from runs.management.commands import serve
from runs.management.commands.ensure_admin import admin_password_notice

pytestmark = pytest.mark.django_db


@pytest.fixture
def data_dir(settings, tmp_path, monkeypatch):
    monkeypatch.delenv("KSEEK_ADMIN_PASSWORD", raising=False)
    settings.DATA_DIR = tmp_path
    return tmp_path


def generated_password(out: str) -> str:
    return out.split("password: ")[1].split()[0]


def test_the_generated_password_is_kept_in_a_file_only_its_owner_can_read(data_dir):
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    password = generated_password(out.getvalue())
    kept = data_dir / "admin_password"
    assert str(kept) in out.getvalue()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert kept.read_text().splitlines() == ["admin", password]
    assert "changepassword admin" in out.getvalue()


def test_the_readmes_command_prints_the_kept_password_alone(data_dir):
    """Audit 11d: the README said the password is kept in the file, which holds the account's name first."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    command = re.search(r"`([^`]*data/admin_password[^`]*)` prints the password", readme)
    assert command, "the README shows the command that prints the kept password"
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    printed = subprocess.run(
        command[1].replace("data/", ""), shell=True, cwd=data_dir, capture_output=True, text=True, check=True
    ).stdout
    assert printed.strip() == generated_password(out.getvalue())


def test_the_notice_shows_the_password_until_it_is_changed_then_deletes_the_file(data_dir):
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    password = generated_password(out.getvalue())
    assert password in admin_password_notice() and "changepassword admin" in admin_password_notice()
    admin = get_user_model().objects.get(username="admin")
    admin.set_password("a-new-one-123456")
    admin.save()
    assert admin_password_notice() is None
    assert not (data_dir / "admin_password").exists()


def test_a_chosen_password_is_written_nowhere(data_dir, monkeypatch):
    monkeypatch.setenv("KSEEK_ADMIN_PASSWORD", "correct-horse-battery")
    call_command("ensure_admin", stdout=io.StringIO())
    assert not (data_dir / "admin_password").exists() and admin_password_notice() is None


class FakeProcess:
    returncode = 0

    def __init__(self, *args, **kwargs):
        pass

    def poll(self):
        return None

    def terminate(self):
        pass

    def wait(self, timeout=None):
        return 0


def test_serve_prints_the_password_again_after_the_server_is_up(data_dir, monkeypatch):
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    password = generated_password(out.getvalue())
    command = serve.Command(stdout=io.StringIO())
    monkeypatch.setattr(serve.subprocess, "Popen", FakeProcess)
    monkeypatch.setattr(serve.signal, "signal", lambda *args: None)
    monkeypatch.setattr(serve.Command, "wait_for_port", lambda self, *args: None)
    monkeypatch.setattr(serve.time, "sleep", lambda s: setattr(command, "stopping", True))
    banner = io.StringIO()
    call_command(command, "--no-worker", "--no-demo", stdout=banner)
    lines = banner.getvalue().splitlines()
    assert "KernelSeek on http://127.0.0.1:8000/" in lines[0]
    assert password in lines[1] and str(data_dir / "admin_password") in lines[1]
