"""Create an admin account when the site has none, so that a fresh `make run` can be logged into.

The password is KSEEK_ADMIN_PASSWORD when set; otherwise one is generated, printed, and kept in the data folder
(`admin_password`, mode 0600, readable only by the user who runs the site) so that it is still there after the
start-up output has scrolled away under the server's access log. `serve` prints it again once the server is up,
for as long as it is still the admin's password; changing the password (`manage.py changepassword admin`, or the
admin) makes the file stale, and `serve` then deletes it.
"""

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from kseek_site.envconfig import private_data_folder

PASSWORD_FILE_NAME = "admin_password"


def admin_password_file() -> Path:
    return Path(settings.DATA_DIR) / PASSWORD_FILE_NAME


def write_admin_password(username: str, password: str) -> Path:
    """The generated password, in a file only its owner can read (created with that mode, never widened)."""
    path = admin_password_file()
    private_data_folder(path.parent)
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(f"{username}\n{password}\n")
    return path


def admin_password_notice() -> str | None:
    """What `serve` prints under its banner: the generated admin password while it is still the admin's, with
    where it is kept and how to change it; None when there is none to show. A stale file (the password has been
    changed since) is deleted, so that it never shows a password that does not work."""
    path = admin_password_file()
    try:
        username, password = path.read_text().splitlines()[:2]
    except (OSError, ValueError):
        return None
    user = get_user_model().objects.filter(username=username).first()
    if user is None or not user.check_password(password):
        path.unlink(missing_ok=True)
        return None
    return (
        f"admin login: {username} / {password}  (kept in {path}; change it with "
        f"`.venv/bin/python manage.py changepassword {username}`, and this file is then deleted)"
    )


class Command(BaseCommand):
    help = "Create the admin account when no superuser exists (password: KSEEK_ADMIN_PASSWORD or generated)."

    def add_arguments(self, parser):
        parser.add_argument("--username", default=os.environ.get("KSEEK_ADMIN_USER", "admin"))

    def handle(self, *args, username, **options):
        users = get_user_model()
        if users.objects.filter(is_superuser=True).exists():
            self.stdout.write("An admin account exists already; nothing to do.")
            return
        password = os.environ.get("KSEEK_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        users.objects.create_superuser(username=username, email="", password=password)
        if os.environ.get("KSEEK_ADMIN_PASSWORD"):
            self.stdout.write(self.style.SUCCESS(f"Created admin account {username!r} with KSEEK_ADMIN_PASSWORD."))
            return
        path = write_admin_password(username, password)
        self.stdout.write(
            self.style.SUCCESS(
                f"Created admin account {username!r} with password: {password}\n"
                f"  (kept in {path}, readable only by you, until you change it; serve prints it again once it is "
                f"up; forgotten: `.venv/bin/python manage.py changepassword {username}`)"
            )
        )
