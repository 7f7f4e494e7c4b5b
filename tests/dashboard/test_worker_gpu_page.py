"""Which GPU each run holds (issue 21): the worker's claim names the GPU, the server records it on the run, and
the run's page, its live summary and the workers page show it."""

import pytest
from asgiref.sync import sync_to_async

from runs.models import Run
from tests.dashboard.helpers import connected_worker, make_user, make_worker
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db(transaction=True)


async def claim(socket, gpu):
    await socket.send_json_to({"type": "claim", "v": 1, "gpu": gpu})
    assign = await socket.receive_json_from(timeout=5)
    assert assign["type"] == "assign", assign
    return assign["run"]["id"]


async def test_the_gpu_a_claim_names_is_shown_on_the_run_page_its_summary_and_the_workers_page(client):
    _, token = await sync_to_async(make_worker)("two-gpus")
    first, second, third = [await sync_to_async(make_run)() for _ in range(3)]
    socket = await connected_worker(token)
    assert await claim(socket, 1) == first.pk
    assert await claim(socket, 0) == second.pk
    assert await claim(socket, "one") == third.pk  # not an index: the run is taken, no GPU is recorded
    gpus = await sync_to_async(lambda: dict(Run.objects.values_list("pk", "worker_gpu")))()
    assert gpus == {first.pk: "gpu 1", second.pk: "gpu 0", third.pk: ""}

    await sync_to_async(client.force_login)(await sync_to_async(make_user)("olga", "operator"))
    page = (await sync_to_async(client.get)(f"/runs/{first.pk}/")).content.decode()
    assert '<span id="run-worker">two-gpus</span><span id="run-worker-gpu"> · gpu 1</span>' in page
    third_page = (await sync_to_async(client.get)(f"/runs/{third.pk}/")).content.decode()
    assert '<span id="run-worker-gpu"></span>' in third_page
    summary = (await sync_to_async(client.get)(f"/runs/{second.pk}/summary/")).json()
    assert summary["worker"] == "two-gpus" and summary["worker_gpu"] == "gpu 0"
    workers = (await sync_to_async(client.get)("/workers/")).content.decode()
    assert f">#{first.pk}</a> on gpu 1" in workers and f">#{second.pk}</a> on gpu 0" in workers
    assert f">#{third.pk}</a> on an unnamed GPU" in workers
    await socket.disconnect()
