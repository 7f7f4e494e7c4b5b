"""The reads of the worker hosts: the workers page, which targets the connected hosts serve now, and why a
queued run has no worker yet (its page and the runs list say it)."""

from collections.abc import Sequence

from django.db.models import Count, Prefetch, Q, QuerySet

from runs.models import (
    HELD_STATUSES,
    Run,
    RunStatus,
    Target,
    WorkerHost,
)

# The statuses of a run that holds one of its worker's slots (a GPU): a run waiting for its reviewer is parked.
SLOT_STATUSES = (RunStatus.RUNNING, RunStatus.PAUSED)


def worker_hosts() -> QuerySet[WorkerHost]:
    """The hosts, each with `active_runs` (how many it holds) and `held_runs` (those runs, with their GPUs)."""
    held = Prefetch("runs", queryset=Run.objects.filter(status__in=HELD_STATUSES).order_by("pk"), to_attr="held_runs")
    return (
        WorkerHost.objects.annotate(active_runs=Count("runs", filter=Q(runs__status__in=HELD_STATUSES)))
        .prefetch_related(held)
        .order_by("name")
    )


def held_runs_of(host: WorkerHost) -> QuerySet[Run]:
    """The runs `host` holds now (running, waiting for review, paused), newest first."""
    return Run.objects.filter(worker=host, status__in=HELD_STATUSES).select_related("task").order_by("-pk")


def workers_serving_now() -> dict[str, int]:
    """Target -> how many hosts serve it now: connected, token not revoked, the target in their hello's
    `targets` (every target is a key, 0 when none serves it). Hosts are few: their lists are read in Python, which
    works the same on SQLite (no JSON containment there) and PostgreSQL."""
    counts = dict.fromkeys(Target.values, 0)
    for host in WorkerHost.objects.filter(revoked_at__isnull=True).exclude(connection=""):
        for target in set(host.targets) & set(counts):
            counts[target] += 1
    return counts


def run_queue_reason(run: Run) -> str | None:
    """Why a queued run has no worker yet, in the words its page shows; None when it is not waiting for one.

    It reads what `run_claim` decides by (runs/services/runs.py): a connected host whose token is not revoked and
    whose hello announced the run's task's target gets the oldest queued run of the targets it serves when it
    claims, and a worker claims only while it has a free GPU (one run per GPU it offers in its hello,
    docs/protocol.md)."""
    if run.status != RunStatus.QUEUED or run.worker_id is not None:
        return None
    hosts = list(worker_hosts().filter(revoked_at__isnull=True))
    connected = [host for host in hosts if host.is_connected]
    not_started = start_problems(hosts)
    if not connected:
        if not hosts:
            return (
                "no worker host has a token yet: `manage.py serve` starts a local one, or give a GPU host a token "
                "(`manage.py worker_token NAME`) and start `python -m agentloop worker` there"
            )
        names = ", ".join(host.name for host in hosts)
        return f"no worker is online: none of the hosts with a token ({names}) is connected" + not_started
    target = run.task.target
    serving = [host for host in connected if target in host.targets]
    if not serving:
        return unserved_reason(target, connected, offline=[h for h in hosts if not h.is_connected]) + not_started
    # A run waiting for its reviewer holds no slot: its worker parked it (docs/protocol.md 2.4).
    holding = Run.objects.filter(worker__in=serving, status__in=SLOT_STATUSES).order_by("pk")
    busy = dict(holding.order_by().values("worker").annotate(n=Count("pk")).values_list("worker", "n"))
    free_slots = sum(max(0, max(1, len(host.gpus)) - busy.get(host.pk, 0)) for host in serving)
    if free_slots == 0:
        held = ", ".join(f"#{pk}" for pk in holding.values_list("pk", flat=True)[:10])
        slots = sum(max(1, len(host.gpus)) for host in serving)
        return f"all {slots} slot(s) of the connected workers that serve {target} are busy: runs {held} hold them"
    # The runs those hosts would take first: older queued runs of any target one of them serves.
    competing = {t for host in serving for t in host.targets}
    ahead = Run.objects.filter(
        status=RunStatus.QUEUED, worker__isnull=True, created_at__lt=run.created_at, task__target__in=competing
    ).count()
    if ahead:
        return f"{ahead} queued run(s) are ahead of it"
    return "a worker with a free slot is connected: it takes the run at its next claim (within seconds)"


def start_problems(hosts) -> str:
    """ "; the local worker did not start: ... To fix: ...", for each of `hosts` whose worker did not start (as
    `serve` recorded), or "": the reason a queued run waits is then that worker, which the operator can fix."""
    return "".join(f"; {host.start_problem}" for host in hosts if host.start_problem)


def unserved_reason(target: str, connected: list[WorkerHost], offline: Sequence[WorkerHost] = ()) -> str:
    """ "no connected worker serves cuda-sm90", with what the connected ones serve and which offline host would."""
    serves = "; ".join(f"{host.name} serves {', '.join(host.targets) or 'no target'}" for host in connected)
    reason = f"no connected worker serves {target}" + (f" ({serves})" if serves else "")
    waiting = [host.name for host in offline if target in host.targets]
    if waiting:
        reason += f"; {', '.join(waiting)} served it when last connected"
    return reason


def runs_queue_reasons(runs) -> dict[int, str | None]:
    """Of `runs` (a page of the runs list), each queued one that no worker holds yet: run id -> why it waits, in
    the words its page shows (`run_queue_reason`). The unserved ones (`runs_unserved`) in one read of the hosts;
    the few others, each on its own."""
    unserved = runs_unserved(runs)
    waiting = [run for run in runs if run.status == RunStatus.QUEUED and run.worker_id is None]
    return {run.pk: unserved.get(run.pk) or run_queue_reason(run) for run in waiting}


def runs_unserved(runs) -> dict[int, str]:
    """Of `runs` (a page of the runs list), the queued ones that no connected worker can serve: run id -> why
    ("no connected worker serves cuda-sm90"). One read of the hosts for the whole page."""
    queued = [run for run in runs if run.status == RunStatus.QUEUED and run.worker_id is None]
    if not queued:
        return {}
    served = workers_serving_now()
    not_started = start_problems(WorkerHost.objects.filter(revoked_at__isnull=True).exclude(start_problem=""))
    return {
        run.pk: f"no connected worker serves {run.task.target}{not_started}"
        for run in queued
        if not served.get(run.task.target)
    }
