"""Register a GPU worker host and print its token (once), give a host a new token, or revoke a host's token."""

from django.core.management.base import BaseCommand, CommandError

from runs.models import WorkerHost
from runs.services import ServiceError, worker_host_create, worker_host_revoke, worker_host_rotate_token
from runs.services.workers import gpu_names_from_text


class Command(BaseCommand):
    help = "Create a worker host and print its token, give it a new one with --rotate, or revoke it with --revoke."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the host's name, e.g. gpu-node-1")
        parser.add_argument("--gpus", default="", help="comma-separated GPU names")
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--revoke", action="store_true", help="revoke the host's token instead")
        action.add_argument(
            "--rotate",
            action="store_true",
            help="give an existing host a new token (the old one stops working, its open sockets closed; a revocation "
            "is lifted)",
        )

    def handle(self, *args, name, gpus, revoke, rotate, **options):
        if rotate:
            host = WorkerHost.objects.filter(name=name).first()
            if host is None:
                raise CommandError(f"no worker host named {name!r}")
            _, token = worker_host_rotate_token(host=host)
            self.stdout.write(f"Worker host {name} has a new token (shown once, stored only hashed):\n{token}")
            return
        if revoke:
            host = WorkerHost.objects.filter(name=name).first()
            if host is None:
                raise CommandError(f"no worker host named {name!r}")
            worker_host_revoke(host=host)
            self.stdout.write(f"Revoked the token of {name}.")
            return
        if WorkerHost.objects.filter(name=name).exists():
            raise CommandError(
                f"a worker host named {name!r} exists; give it a new token with --rotate, or choose another name"
            )
        try:
            host, token = worker_host_create(name=name, gpus=gpu_names_from_text(gpus))
        except ServiceError as refused:
            raise CommandError(str(refused)) from None
        self.stdout.write(f"Worker host {host.name} created. Its token (shown once, stored only hashed):\n{token}")
