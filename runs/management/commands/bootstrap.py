"""Everything `make run` needs in the database after `migrate`: tasks, question bank, released kernels, admin.

Each part is idempotent, so the command runs at every start. A part whose source is not in this checkout
(no bank file yet, no released kernel) says so and is skipped; a part that fails stops the start with its error,
except `load_released_kernels`: a refused release is content this checkout ships, not the site's working, so its
refusals (one line each, on stderr) and the command's "loaded N, refused M" are printed and the start goes on,
serving the dashboard with the releases that loaded.
"""

from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Load tasks, the question bank and released kernels, and make sure an admin account exists."

    # Commands that other apps add as they land; run in this order when present.
    PARTS = ["sync_tasks", "load_bank", "load_released_kernels", "ensure_admin"]
    # Parts whose failure is reported and does not stop the start (see the module's docstring).
    REPORTED_ONLY = {"load_released_kernels"}

    def handle(self, *args, **options):
        available = get_commands()
        for name in self.PARTS:
            if name not in available:
                self.stdout.write(f"bootstrap: {name} is not available in this checkout; skipped")
                continue
            self.stdout.write(f"bootstrap: {name}")
            try:
                call_command(name, stdout=self.stdout, stderr=self.stderr)
            except CommandError as error:
                if name not in self.REPORTED_ONLY:
                    raise
                self.stderr.write(
                    f"bootstrap: {name}: {error}; the site starts anyway (a refused release is left as it was)"
                )
