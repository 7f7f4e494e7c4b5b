"""A worker is given only runs of the targets its hello announced (docs/protocol.md 2.2 `targets`), a worker that
announces none is given none and told why, and a queued run no connected worker can serve says so."""

import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, transaction
from django.urls import reverse

from runs.models import Run, Task, WorkerHost
from runs.services import hello_targets, run_claim, worker_connected, worker_hello
from tests.dashboard.helpers import make_user, make_worker, worker_socket
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


def cpu_and_cuda_runs():
    """Oldest first: a cuda-sm90 run, then a cpu run, then another cuda-sm90 run."""
    cuda, cpu = make_task("attention_fwd", target="cuda-sm90"), make_task("matmul_cpu", target="cpu")
    return make_run(task=cuda), make_run(task=cpu), make_run(task=cuda)


def test_a_cpu_only_host_skips_the_older_cuda_run_and_takes_the_cpu_run():
    cuda_first, cpu_run, cuda_second = cpu_and_cuda_runs()
    host, _ = make_worker("cpu-box", targets=["cpu"])
    assert run_claim(worker=host).pk == cpu_run.pk
    assert run_claim(worker=host) is None  # nothing else of cpu is queued; the cuda runs wait
    assert set(Run.objects.filter(status="queued").values_list("pk", flat=True)) == {cuda_first.pk, cuda_second.pk}


def test_a_host_that_serves_both_targets_takes_the_oldest_run_of_either():
    cuda_first, cpu_run, cuda_second = cpu_and_cuda_runs()
    host, _ = make_worker("h200", targets=["cpu", "cuda-sm90"])
    assert [run_claim(worker=host).pk for _ in range(3)] == [cuda_first.pk, cpu_run.pk, cuda_second.pk]


def test_a_cuda_host_that_does_not_serve_cpu_leaves_the_cpu_run():
    cuda_first, cpu_run, cuda_second = cpu_and_cuda_runs()
    host, _ = make_worker("cuda-only", targets=["cuda-sm90"])
    assert [run_claim(worker=host).pk for _ in range(2)] == [cuda_first.pk, cuda_second.pk]
    assert run_claim(worker=host) is None and Run.objects.get(pk=cpu_run.pk).status == "queued"


def test_a_host_that_announced_no_target_is_given_no_run():
    make_run()
    never_greeted, _ = make_worker("silent", targets=None)
    assert never_greeted.targets == [] and run_claim(worker=never_greeted) is None
    greeted, _ = make_worker("cpu-box", targets=["cpu"])
    # A later hello without a readable list replaces the targets: fail closed, not the old list kept.
    greeted = worker_hello(worker=greeted, gpus=greeted.gpus, targets="cpu")
    assert WorkerHost.objects.get(pk=greeted.pk).targets == [] and run_claim(worker=greeted) is None


def test_the_claim_reads_the_hosts_targets_from_its_row_not_from_the_callers_copy():
    make_run()
    host, _ = make_worker("cpu-box", targets=["cpu"])
    stale = WorkerHost.objects.get(pk=host.pk)
    worker_hello(worker=host, gpus=host.gpus, targets=["cuda-sm90"])  # its newest hello serves cuda only
    assert stale.targets == ["cpu"] and run_claim(worker=stale) is None


@pytest.mark.parametrize(
    ("raw", "served", "problem"),
    [
        (None, [], "hello has no `targets`"),
        ("cpu", [], "must be a list of at most 16 target names, each a string of at most 40 characters"),
        ([1, 2], [], "must be a list of at most 16 target names, each a string of at most 40 characters"),
        (["cpu"] * 17, [], "must be a list of at most 16 target names, each a string of at most 40 characters"),
        (["x" * 41], [], "must be a list of at most 16 target names, each a string of at most 40 characters"),
        ([], [], "names no target this server knows"),
        (["rocm-gfx942"], [], "names no target this server knows"),
        (["cuda-sm90", "rocm-gfx942", "cpu", "cpu"], ["cuda-sm90", "cpu"], "'rocm-gfx942' not known here"),
        (["cpu", "cuda-sm90"], ["cpu", "cuda-sm90"], None),
    ],
)
def test_hello_targets_fails_closed_and_says_why(raw, served, problem):
    got, why = hello_targets(raw)
    assert got == served
    if problem is None:
        assert why is None
    else:
        assert problem in why
        # The reply an outside implementer reads names what this server knows.
        assert "cpu, cuda-sm90" in why
        if not served:
            assert "given no run" in why


@pytest.mark.django_db(transaction=True)
async def test_a_hello_without_targets_is_welcomed_told_why_and_given_no_run():
    await sync_to_async(make_run)()
    _, token = await sync_to_async(make_worker)("old-worker", targets=None)
    socket = worker_socket(token)
    assert (await socket.connect())[0]
    await socket.send_json_to({"type": "hello", "v": 1, "host": "old", "gpus": ["gpu 0"], "active_runs": []})
    welcome = await socket.receive_json_from(timeout=5)
    assert welcome["type"] == "welcome" and welcome["targets"] == []
    error = await socket.receive_json_from(timeout=5)
    assert error["type"] == "error" and "hello has no `targets`" in error["error"]
    await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "no_work" and "serves no target" in reply["reason"]
    await socket.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_cpu_worker_is_welcomed_with_its_targets_and_assigned_only_cpu_runs():
    cuda_first, cpu_run, _ = await sync_to_async(cpu_and_cuda_runs)()
    _, token = await sync_to_async(make_worker)("cpu-box", targets=None)
    socket = worker_socket(token)
    assert (await socket.connect())[0]
    await socket.send_json_to(
        {"type": "hello", "v": 1, "host": "cpu-box", "gpus": ["gpu 0"], "targets": ["cpu"], "active_runs": []}
    )
    assert (await socket.receive_json_from(timeout=5)) | {"limits": None} == {
        "type": "welcome",
        "v": 1,
        "worker": "cpu-box",
        "accepts": ["events"],
        "limits": None,
        "targets": ["cpu"],
    }
    for expected in ("assign", "no_work"):
        await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
        reply = await socket.receive_json_from(timeout=5)
        assert reply["type"] == expected, reply
        if expected == "assign":
            assert reply["run"]["id"] == cpu_run.pk and reply["run"]["task"] == "matmul_cpu"
        else:
            assert reply["reason"] == "no queued run of a task for cpu"
    assert await socket.receive_nothing(timeout=0.2)  # no error: the hello was read whole
    await socket.disconnect()
    assert (await sync_to_async(Run.objects.get)(pk=cuda_first.pk)).status == "queued"


def run_page_reason(client, run) -> str:
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    start = html.index('id="run-queue-reason"')
    return html[html.index(">", start) + 1 : html.index("</dd>", start)]


def test_a_queued_run_no_connected_worker_serves_says_so_on_its_page_and_in_the_runs_list(client):
    client.force_login(make_user("olga", "operator"))
    cuda_run, cpu_run, _ = cpu_and_cuda_runs()
    cpu_box, _ = make_worker("cpu-box", targets=["cpu"])
    worker_connected(worker=cpu_box, connection="chan-cpu")
    h200, _ = make_worker("h200", targets=["cpu", "cuda-sm90"])  # has a token, not connected
    reason = run_page_reason(client, cuda_run)
    assert reason.startswith("no connected worker serves cuda-sm90 (cpu-box serves cpu)")
    assert "h200 served it when last connected" in reason
    assert "no connected worker serves" not in run_page_reason(client, cpu_run)
    listing = client.get(reverse("home")).content.decode()
    row = listing[listing.index(f'data-run="{cuda_run.pk}"') :]
    assert "no connected worker serves cuda-sm90" in row[: row.index("</tr>")]
    cpu_row = listing[listing.index(f'data-run="{cpu_run.pk}"') :]
    assert "no connected worker serves" not in cpu_row[: cpu_row.index("</tr>")]
    # Once a host that serves it connects, the reason is another.
    worker_connected(worker=h200, connection="chan-h200")
    assert "no connected worker serves" not in run_page_reason(client, cuda_run)
    assert "no connected worker serves" not in client.get(reverse("runs_rows")).content.decode()


def test_the_workers_page_shows_what_each_host_serves(client):
    client.force_login(make_user("olga", "operator"))
    make_worker("cpu-box", targets=["cpu"])
    make_worker("silent", targets=None)
    html = client.get(reverse("workers")).content.decode()
    cpu_row = html[html.index("<td>cpu-box</td>") :]
    assert '<td class="targets">cpu</td>' in cpu_row[: cpu_row.index("</tr>")]
    silent_row = html[html.index("<td>silent</td>") :]
    assert '<td class="targets">none: given no run</td>' in silent_row[: silent_row.index("</tr>")]


@pytest.mark.django_db(transaction=True)
def test_a_claim_passes_a_claim_in_flight_and_a_locked_task_row():
    """PostgreSQL: a claim skips the run another claim holds locked, and the target is matched without locking
    the task's row (a join under FOR UPDATE would lock it, and a second claim would skip every run of that
    task). SQLite takes one writer at a time, so there is no lock to pass there."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite serialises writers: there is no row lock to pass (run with DATABASE_URL=postgres://)")
    task = make_task("matmul_cpu", target="cpu")
    first, second = make_run(task=task), make_run(task=task)
    host, _ = make_worker("cpu-box", targets=["cpu"])
    locked, release = threading.Event(), threading.Event()

    def hold_locks():
        try:
            with transaction.atomic():
                list(Run.objects.select_for_update().filter(pk=first.pk))  # a claim in flight holds the oldest run
                list(Task.objects.select_for_update().filter(pk=task.pk))  # and something holds its task's row
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_locks)
    holder.start()
    try:
        assert locked.wait(10)
        claimed = run_claim(worker=host)
    finally:
        release.set()
        holder.join(10)
    assert claimed is not None and claimed.pk == second.pk


def test_a_run_waiting_for_its_reviewer_holds_no_slot_and_the_runs_list_says_why_a_queued_run_waits(client):
    from runs.services import run_set_status

    client.force_login(make_user("olga", "operator"))
    task = make_task()
    host, _ = make_worker("one-slot", targets=["cpu"])  # one GPU: one slot
    worker_connected(worker=host, connection="chan-one")
    reviewed = make_run(task)
    run_claim(worker=host, gpu=0)
    queued = make_run(task)
    # The claimed run holds the slot while it runs: the queued one says so, in the runs list too.
    listing = client.get(reverse("home")).content.decode()
    row = listing[listing.index(f'data-run="{queued.pk}"') :]
    assert f"busy: runs #{reviewed.pk} hold them" in row[: row.index("</tr>")]
    # Waiting for its reviewer, it is parked by its worker and holds no slot: the next claim takes the queued run.
    run_set_status(run=reviewed, status="waiting_review", reason="waiting_for_review")
    listing = client.get(reverse("runs_rows")).content.decode()
    row = listing[listing.index(f'data-run="{queued.pk}"') :]
    assert "a worker with a free slot is connected" in row[: row.index("</tr>")]
