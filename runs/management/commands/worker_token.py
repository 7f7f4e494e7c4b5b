"""Register a GPU worker host and print its token (once), or revoke a host's token."""

from django.core.management.base import BaseCommand, CommandError

from runs.models import WorkerHost
from runs.services import worker_host_create, worker_host_revoke


class Command(BaseCommand):
    help = "Create a worker host and print its token, or revoke one with --revoke."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the host's name, e.g. gpu-node-1")
        parser.add_argument("--gpus", default="", help="comma-separated GPU names")
        parser.add_argument("--revoke", action="store_true", help="revoke the host's token instead")

    def handle(self, *args, name, gpus, revoke, **options):
        if revoke:
            host = WorkerHost.objects.filter(name=name).first()
            if host is None:
                raise CommandError(f"no worker host named {name!r}")
            worker_host_revoke(host=host)
            self.stdout.write(f"Revoked the token of {name}.")
            return
        if WorkerHost.objects.filter(name=name).exists():
            raise CommandError(f"a worker host named {name!r} exists; revoke it or choose another name")
        host, token = worker_host_create(name=name, gpus=[g for g in gpus.split(",") if g])
        self.stdout.write(f"Worker host {host.name} created. Its token (shown once, stored only hashed):\n{token}")
