"""Create an admin account when the site has none, so that a fresh `make run` can be logged into.

The password is KSEEK_ADMIN_PASSWORD when set; otherwise one is generated and printed once, here, and stored
nowhere but as Django's password hash.
"""

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


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
        else:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Created admin account {username!r} with password: {password}\n"
                    "  (shown this once; change it in the admin, or set KSEEK_ADMIN_PASSWORD before the first run)"
                )
            )
