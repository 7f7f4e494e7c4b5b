"""Writes to worker hosts: tokens (stored hashed), hello, and the runs a host lost."""

import hashlib
import json
import secrets

from django.db import transaction
from django.utils import timezone

from agentloop.json_safe import holds_lone_surrogate
from runs.events import publish_after_commit, send_to_group_after_commit
from runs.models import HELD_STATUSES, Run, RunStatus, Target, WorkerHost
from runs.services.directives import worker_group
from runs.services.errors import ServiceError
from runs.services.runs import run_set_status


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def worker_host_create(*, name: str, gpus: list[str] | None = None) -> tuple[WorkerHost, str]:
    """Register a GPU host. Returns the host and its token; only the token's hash is stored. Its GPU names are
    held to a hello's limits (gpu_names_refusal), whether they come from the workers page or `worker_token`."""
    # Within its column, as the workers page's form holds it: `worker_token` passed a name of any length, which
    # a longer one turned into a database error on PostgreSQL (and stored whole on SQLite).
    most = WorkerHost._meta.get_field("name").max_length or 0
    if not name or len(name) > most:
        raise ServiceError(f"a host's name has 1 to {most} characters, not {len(name)}: {name[:40]!r}")
    if refusal := gpu_names_refusal(gpus or []):
        raise ServiceError(refusal)
    token = "kst_" + secrets.token_urlsafe(32)
    host = WorkerHost.objects.create(name=name, gpus=gpus or [], token_hash=hash_token(token), token_prefix=token[:12])
    return host, token


def worker_host_authenticate(token: str) -> WorkerHost | None:
    """The active host this token belongs to, or None. Revoked tokens authenticate nobody."""
    if not token:
        return None
    return WorkerHost.objects.filter(token_hash=hash_token(token), revoked_at__isnull=True).first()


def worker_host_rotate_token(*, host: WorkerHost) -> tuple[WorkerHost, str]:
    """Give a host a new token and lift a revocation. Returns the token.

    The old token stops working at once, open sockets included: a rotation is how a leaked token is replaced, so
    a socket opened with it is closed as a revoked one (4401), on any server process, and until it has closed
    nothing it sends is acted on (`worker_socket_state` compares the token it opened with)."""
    token = "kst_" + secrets.token_urlsafe(32)
    with transaction.atomic():
        host.token_hash, host.token_prefix, host.revoked_at = hash_token(token), token[:12], None
        host.save(update_fields=["token_hash", "token_prefix", "revoked_at"])
        # Each socket checks its own token against the database on this notice: one opened with the new token
        # (a worker restarted at once) stays open.
        send_to_group_after_commit(worker_group(host.pk), {"type": "worker.revoked"})
        _announce_to_held_runs(host)
    return host, token


def worker_host_note_start(*, host: WorkerHost, problem: str = "") -> WorkerHost:
    """Record why the host's worker did not start (`problem`, with what to do), or, with none, that it started."""
    host.start_problem = problem
    host.save(update_fields=["start_problem"])
    return host


def worker_host_revoke(*, host: WorkerHost) -> WorkerHost:
    """Withdraw a host's token: its next handshake is refused, and every socket it has open (on any server
    process: the message goes through the channel layer) is closed at once with 4401. Until a socket has closed,
    nothing it sends is acted on: its events are not stored (runs.services.worker_events) and its claims get no
    run (run_claim). Its runs stay with it, shown as held by a host that went away, with the revocation as the
    reason, until an operator stops them or the host comes back with a new token."""
    with transaction.atomic():
        WorkerHost.objects.filter(pk=host.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        host.refresh_from_db(fields=["revoked_at"])
        send_to_group_after_commit(worker_group(host.pk), {"type": "worker.revoked"})
        _announce_to_held_runs(host)
    return host


def worker_host_is_revoked(*, worker: WorkerHost) -> bool:
    """Whether the host's token has been revoked since `worker` was read (its socket may still be open)."""
    return WorkerHost.objects.filter(pk=worker.pk, revoked_at__isnull=False).exists()


# A hello lists a handful of targets; a longer list, or a longer name, is not a list of targets.
TARGETS_MAX_COUNT = 16
TARGET_NAME_MAX_CHARS = 40
NO_RUN = "this worker is given no run until its hello lists a target it serves"


def hello_targets(raw) -> tuple[list[str], str | None]:
    """The targets a hello's `targets` field announces that this server knows (Target values, in the order
    given, once each), and what was wrong with the field, in words for the worker's operator (None: nothing).

    Fail closed (docs/protocol.md 2.2): a missing or malformed field, or one that names no known target, gives an
    empty list, and a host that serves no target is given no run. A name this server does not know (a newer
    target) is left out and named in the problem; the known ones are served."""
    known = ", ".join(sorted(Target.values))
    if raw is None:
        return [], f"hello has no `targets` (a list of the task targets it serves; known here: {known}): {NO_RUN}"
    if (
        not isinstance(raw, list)
        or len(raw) > TARGETS_MAX_COUNT
        or not all(isinstance(t, str) and len(t) <= TARGET_NAME_MAX_CHARS for t in raw)
    ):
        return [], (
            f"hello `targets` must be a list of at most {TARGETS_MAX_COUNT} target names, each a string of at most "
            f"{TARGET_NAME_MAX_CHARS} characters (known here: {known}), not {json.dumps(raw, default=str)[:100]}: "
            f"{NO_RUN}"
        )
    served = [t for t in dict.fromkeys(raw) if t in Target.values]
    unknown = [t for t in dict.fromkeys(raw) if t not in Target.values]
    if not served:
        return [], f"hello `targets` names no target this server knows ({raw!r}; known here: {known}): {NO_RUN}"
    if unknown:
        return served, (
            f"hello `targets`: {', '.join(map(repr, unknown))} not known here (known: {known}), left out; runs of "
            f"{', '.join(served)} are given to this worker"
        )
    return served, None


def no_work_reason(worker: WorkerHost) -> str:
    """Why a claim of this host got no run, for the `no_work` answer (docs/protocol.md 2.9)."""
    if not worker.targets:
        return f"this worker serves no target this server knows ({', '.join(sorted(Target.values))}): {NO_RUN}"
    return f"no queued run of a task for {', '.join(worker.targets)}"


# A hello names each GPU it offers; the workers page shows the names (docs/protocol.md 2.2).
GPUS_MAX_COUNT = 64
GPU_NAME_MAX_CHARS = 100


def hello_gpus(raw) -> tuple[list[str], str | None]:
    """The GPU names a hello's `gpus` field announces, and what was wrong with the field (None: nothing). A field
    that is not a list of at most GPUS_MAX_COUNT strings of at most GPU_NAME_MAX_CHARS characters is refused whole:
    the host is shown with no GPU names (nothing is cut or kept from before), and the worker is told why."""
    if isinstance(raw, list) and len(raw) <= GPUS_MAX_COUNT and all(_gpu_name(g) for g in raw):
        return raw, None
    return [], (
        f"hello `gpus` must be a list of at most {GPUS_MAX_COUNT} GPU names, each a string of at most "
        f"{GPU_NAME_MAX_CHARS} characters (text that UTF-8 holds: no lone surrogate), not "
        f"{json.dumps(raw, default=str)[:100]}: this host is shown with no GPU"
    )


def gpu_names_from_text(text: str) -> list[str]:
    """The GPU names of a comma-separated list as an operator writes it ("H100, H100"), each stripped of the
    spaces around it, empty ones dropped: the workers page's form and `worker_token --gpus` read it the same way
    (the command kept " H100", which the page stripped)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def gpu_names_refusal(names: list[str]) -> str | None:
    """Why a host's GPU names, as an operator registers them, cannot be kept (None: they can): a hello's limits,
    so that the workers page shows one host's names the same way whoever wrote them (the page and `worker_token`
    took any number of names of any length that a hello is refused)."""
    if len(names) <= GPUS_MAX_COUNT and all(_gpu_name(g) for g in names):
        return None
    longest = max((len(g) for g in names if isinstance(g, str)), default=0)
    return (
        f"a host has at most {GPUS_MAX_COUNT} GPU names, each at most {GPU_NAME_MAX_CHARS} characters, as a hello "
        f"(docs/protocol.md 2.2): {len(names)} given, the longest of {longest} characters"
    )


def _gpu_name(name) -> bool:
    """Whether a hello's GPU name can be kept and shown: a string within GPU_NAME_MAX_CHARS that UTF-8 holds (a lone
    surrogate, "\\ud800" in JSON, made the workers page fail for every operator when it wrote the name)."""
    return isinstance(name, str) and len(name) <= GPU_NAME_MAX_CHARS and not holds_lone_surrogate(name)


def hello_active_runs(raw) -> set[int] | None:
    """The run ids a hello's `active_runs` lists, or None when the field is malformed (then it changes nothing,
    docs/protocol.md 2.4): a list of objects, each with a `run_id` that is a server run's id, an integer (not a
    boolean, a float or a string, as for an event's run_id: 1.1)."""
    if not isinstance(raw, list):
        return None
    ids = set()
    for entry in raw:
        run_id = entry.get("run_id") if isinstance(entry, dict) else None
        if type(run_id) is not int:
            return None
        ids.add(run_id)
    return ids


def worker_hello(*, worker: WorkerHost, gpus, targets=None) -> WorkerHost:
    """Record what a host's hello says it offers: its GPUs (`hello_gpus`) and the targets it serves
    (`hello_targets`). Every hello replaces both, so a hello without a readable list leaves the host with no GPU
    names, serving no target."""
    fields = []
    names, _ = hello_gpus(gpus)
    if names != worker.gpus:
        worker.gpus = names
        fields.append("gpus")
    served, _ = hello_targets(targets)
    if served != worker.targets:
        worker.targets = served
        fields.append("targets")
    if fields:
        worker.save(update_fields=fields)
    return worker


def worker_connected(*, worker: WorkerHost, connection: str) -> str:
    """The host's socket `connection` (a channel name) is open: it is the host's live socket from now on, and the
    host is shown connected through it, since now (`last_seen`). A host has one live socket (docs/protocol.md
    2.1): returns the channel name of the socket this one replaces ('' if none), which the caller closes."""
    with transaction.atomic():
        previous = (
            WorkerHost.objects.select_for_update().filter(pk=worker.pk).values_list("connection", flat=True).first()
        )
        WorkerHost.objects.filter(pk=worker.pk).update(connection=connection, last_seen=timezone.now())
        _announce_to_held_runs(worker)
    return previous if previous and previous != connection else ""


REVOKED, SUPERSEDED = "revoked", "superseded"


def worker_socket_state(*, worker: WorkerHost, connection: str) -> str | None:
    """Why the host's socket `connection` may no longer act, by the database: REVOKED (the host's token was
    revoked, or replaced by a rotation, since the socket opened with `worker.token_hash`), SUPERSEDED (a newer
    socket of the host opened since: worker_connected), or None."""
    row = WorkerHost.objects.filter(pk=worker.pk).values_list("revoked_at", "connection", "token_hash").first()
    if row is None or row[0] is not None or row[2] != worker.token_hash:
        return REVOKED
    return SUPERSEDED if row[1] != connection else None


def worker_disconnected(*, worker: WorkerHost, connection: str) -> bool:
    """The socket `connection` closed. The host is shown offline only if that was its newest socket (a new one may
    have opened before the old one's close was noticed). Returns whether the host is now shown offline."""
    with transaction.atomic():
        changed = WorkerHost.objects.filter(pk=worker.pk, connection=connection).update(
            connection="", disconnected_at=timezone.now()
        )
        if changed:
            _announce_to_held_runs(worker)
    return bool(changed)


def _announce_to_held_runs(worker: WorkerHost) -> None:
    # The pages of the runs this host holds show whether it is connected; they re-read their summary.
    for run_id in Run.objects.filter(worker=worker, status__in=HELD_STATUSES).values_list("pk", flat=True):
        publish_after_commit(run_id, {"type": "run.changed", "run_id": run_id, "worker_changed": True})


def worker_runs_reconcile(*, worker: WorkerHost, active_run_ids: set[int]) -> dict[int, str]:
    """Runs this worker holds here but did not list in its `hello` (docs/protocol.md 2.4): it has lost them
    (a wiped state folder, a new machine under the old name), so no event of theirs will come.

    A run with no stored event was never started there (the `assign` may have been lost with the connection):
    it goes back to the queue for any worker. A run that has events is failed, with the reason, rather than
    started afresh elsewhere, where a second copy could mix its events with the first's. Returns run id -> new
    status.
    """
    changed = {}
    with transaction.atomic():
        held = Run.objects.select_for_update().filter(worker=worker, status__in=HELD_STATUSES)
        for run in held:
            if run.pk in active_run_ids:
                continue
            if run.step_count == 0:
                # Back to the queue, unheld: not a transition run_set_status makes (a running run never goes back).
                run.status, run.worker, run.started_at = RunStatus.QUEUED, None, None
                run.status_reason = f"re-queued: worker {worker.name} reconnected without it before it started"
                run.save(update_fields=["status", "worker", "started_at", "status_reason", "updated_at"])
                publish_after_commit(
                    run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True
                )
            else:
                # A failure like any other: its time, its announcement and its notice come with the transition.
                run = run_set_status(
                    run=run,
                    status=RunStatus.FAILED,
                    reason=f"worker {worker.name} reconnected without this run: its state is lost",
                )
            changed[run.pk] = run.status
    return changed
