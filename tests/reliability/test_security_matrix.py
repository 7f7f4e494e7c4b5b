"""Who can do what: every page, form, API and socket, for anonymous, viewer, reviewer, operator and worker.

A "worker" here is a request carrying a worker host's token (and no session): it opens the worker socket and
nothing else. Denied requests are checked to have changed nothing.
"""

import io
from pathlib import Path

import pytest
from channels.db import database_sync_to_async as sync_to_async  # closes its connection: PostgreSQL test databases drop
from channels.testing import WebsocketCommunicator
from django.test import Client

from kseek_site.asgi import application
from runs.models import Directive, Question, Run, RunStatus, Step, WorkerHost
from runs.services import run_claim, suite_study_start, trace_import, worker_event_record
from runs.services.suites import suite_store
from runs.suite_manifest import parse_manifest
from tests.dashboard.helpers import (
    BROWSER_HEADERS,
    WORKER_HEADERS,
    evaluation_payload,
    event,
    make_user,
    make_worker,
    question_payload,
)
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db(transaction=True)

ROLES = ["anonymous", "viewer", "reviewer", "operator", "worker"]
RANK = {"anyone": -2, "anonymous": -1, "worker": -1, "viewer": 0, "reviewer": 1, "operator": 2}

# The shipped recording: a model that can run on any site (a start with a model that cannot is refused, 400).
DEMO_REPLAY = "replay:agentloop/replays/matmul_cpu_demo.jsonl"


@pytest.fixture
def world():
    host, token = make_worker("gpu-a")
    run = make_run()
    run_claim(worker=host)
    for seq, (kind, payload) in enumerate(
        [
            ("note", {"text": "hi"}),
            ("evaluation", evaluation_payload(1.4)),
            ("question_proposed", question_payload("q-1")),
        ]
    ):
        worker_event_record(worker=host, event=event(run.pk, seq, kind, payload))
    run.refresh_from_db()
    kernel = run.kernels.get()
    other = make_run(task=run.task)  # a second run, for the compare page
    demo = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"
    parent = trace_import(lines=io.BytesIO(demo.read_bytes()), name="demo.jsonl")  # a run to fork
    # A suite of the task, and a study over it, for the suite pages and the scoreboard.
    suite = suite_store(
        parse_manifest({"problems": [{"file": "1_Matmul.py", "name": "matmul_cpu", "outcome": "imported"}]}), name="kb"
    )
    suite_study = suite_study_start(suite=suite, setting="questions", values=["on", "off"], model=DEMO_REPLAY)
    return {
        "suite": suite,
        "suite_study": suite_study,
        "parent": parent,
        "host": host,
        "token": token,
        "run": run,
        "run2": other,
        "question": Question.objects.get(run=run),
        "evaluation": run.evaluations.get(),
        "kernel": kernel,
    }


def client_for(role: str, token: str) -> Client:
    if role == "worker":
        return Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    client = Client()
    if role != "anonymous":
        client.force_login(make_user(f"u-{role}", None if role == "viewer" else role))
    return client


# (method, url template, least role, form data). Every route of runs/urls.py and the admin's front door.
ENDPOINTS = [
    ("get", "/", "viewer", None),
    ("get", "/runs/rows/", "viewer", None),
    ("get", "/runs/{run}/", "viewer", None),
    ("get", "/runs/{run}/steps/?after=0", "viewer", None),
    ("get", "/runs/{run}/steps/1/", "viewer", None),
    ("get", "/runs/{run}/summary/", "viewer", None),
    ("get", "/runs/{run}/chart/", "viewer", None),
    ("get", "/runs/{run}/trace.jsonl", "viewer", None),
    ("get", "/runs/compare/?runs={run},{run2}", "viewer", None),
    ("get", "/review/", "viewer", None),
    ("get", "/review/items/", "viewer", None),
    ("get", "/review/pending/", "viewer", None),
    ("get", "/kernels/", "viewer", None),
    ("get", "/kernels/{kernel}/", "viewer", None),
    ("get", "/kernels/{kernel}/source/", "viewer", None),
    ("get", "/kernels/{kernel}/source/?highlighted=1", "viewer", None),
    ("get", "/kernels/{kernel}/download/", "viewer", None),
    ("get", "/kernels/diff/?a={kernel}&b={kernel}", "viewer", None),
    ("get", "/evaluations/{evaluation}/", "viewer", None),
    ("get", "/bank/", "viewer", None),
    ("get", "/tasks/", "viewer", None),
    ("get", "/tasks/matmul_cpu/", "viewer", None),
    ("get", "/suites/", "viewer", None),
    ("get", "/suites/{suite}/", "viewer", None),
    ("get", "/suites/studies/{suite_study}/", "viewer", None),
    ("get", "/suites/studies/{suite_study}/scoreboard.csv", "viewer", None),
    ("get", "/suites/studies/{suite_study}/scoreboard.json", "viewer", None),
    ("get", "/suites/{suite}/study/", "operator", None),
    (
        "post",
        "/suites/{suite}/study/",
        "operator",
        {"model": DEMO_REPLAY, "review_mode": "auto", "setting": "questions", "values": "on,off"},
    ),
    # Public on purpose: the sign-in page's styles and scripts (no data in them).
    ("get", "/assets/pygments.css", "anyone", None),
    ("get", "/assets/plotly.min.js", "anyone", None),
    ("get", "/accounts/login/", "anyone", None),
    ("get", "/workers/", "operator", None),
    ("get", "/traces/import/", "operator", None),
    ("post", "/review/{question}/decide/", "reviewer", {"decision": "approve"}),
    ("post", "/runs/{run}/message/", "reviewer", {"text": "try tiling"}),
    (
        "post",
        "/bank/add/",
        "reviewer",
        {"text": "What does the roofline say?", "category": "limit", "triggers": ["plateau"]},
    ),
    ("get", "/runs/{parent}/fork/?seq=3", "operator", None),
    ("post", "/runs/{parent}/fork/", "operator", {"seq": "3", "model": DEMO_REPLAY}),
    ("get", "/studies/start/", "operator", None),
    (
        "post",
        "/studies/start/",
        "operator",
        {"task": "matmul_cpu", "model": DEMO_REPLAY, "review_mode": "auto", "setting": "questions", "values": "on,off"},
    ),
    ("post", "/runs/{run}/control/", "operator", {"action": "pause"}),
    ("post", "/runs/start/", "operator", {"task": "matmul_cpu", "model": DEMO_REPLAY, "review_mode": "auto"}),
    ("post", "/kernels/{kernel}/verify/", "operator", {}),
    ("post", "/workers/{host}/revoke/", "operator", {}),
]


def state(world) -> dict:
    """What a denied request must leave as it was."""
    return {
        "runs": Run.objects.count(),
        "status": Run.objects.get(pk=world["run"].pk).status,
        "question": Question.objects.get(pk=world["question"].pk).status,
        "directives": Directive.objects.count(),
        "revoked": WorkerHost.objects.get(pk=world["host"].pk).revoked_at,
        "bank": __import__("questionbank.models", fromlist=["BankQuestion"]).BankQuestion.objects.count(),
    }


@pytest.mark.parametrize("role", ROLES)
def test_each_role_can_do_exactly_what_it_allows_on_every_page_form_and_api(world, role):
    client = client_for(role, world["token"])
    wrong = []
    # Reads first, then the writes a role may make, in an order where no allowed write undoes a later check
    # (the revoke and the pause come last).
    for method, template, least, data in ENDPOINTS:
        url = template.format(
            run=world["run"].pk,
            run2=world["run2"].pk,
            kernel=world["kernel"].pk,
            evaluation=world["evaluation"].pk,
            question=world["question"].pk,
            host=world["host"].pk,
            parent=world["parent"].pk,
            suite=world["suite"].pk,
            suite_study=world["suite_study"].pk,
        )
        before = state(world)
        response = client.get(url) if method == "get" else client.post(url, data)
        allowed = RANK[role] >= RANK[least]
        to_login = response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        if allowed:
            ok = (response.status_code < 400 or response.status_code == 409) and not to_login
        elif role in ("anonymous", "worker"):
            ok = to_login
        else:
            ok = response.status_code == 403
        if not ok:
            wrong.append(f"{method} {url}: {response.status_code} (allowed: {allowed})")
        if (not allowed or method == "get") and state(world) != before:
            wrong.append(f"{method} {url}: changed data though {'denied' if not allowed else 'a read'}")
    assert wrong == []


@pytest.mark.parametrize(
    "method,template,least,data",
    [e for e in ENDPOINTS if e[0] == "post"],
    ids=[t for m, t, _, _ in ENDPOINTS if m == "post"],
)
def test_a_form_post_without_the_csrf_token_is_refused_and_changes_nothing(world, method, template, least, data):
    url = template.format(
        run=world["run"].pk,
        question=world["question"].pk,
        host=world["host"].pk,
        parent=world["parent"].pk,
        kernel=world["kernel"].pk,
        suite=world["suite"].pk,
    )
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("boss", "operator"))
    before = state(world)
    assert client.post(url, data).status_code == 403
    assert state(world) == before


def test_the_admin_is_closed_to_everyone_but_staff(world):
    for role in ROLES:
        response = client_for(role, world["token"]).get("/admin/")
        assert response.status_code == 302 and "/admin/login/" in response["Location"], role


async def feed_socket(path, role, token):
    headers = list(BROWSER_HEADERS)
    if role == "worker":
        headers = list(WORKER_HEADERS) + [(b"authorization", f"Bearer {token}".encode())]
    elif role != "anonymous":
        client = Client()
        user = await sync_to_async(make_user)(
            f"s-{role}-{path.strip('/').replace('/', '-')}", None if role == "viewer" else role
        )
        await sync_to_async(client.force_login)(user)
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


@pytest.mark.parametrize("role", ROLES)
async def test_feed_sockets_open_for_signed_in_users_only_and_the_worker_socket_for_a_worker_token_only(world, role):
    for path in (f"/ws/runs/{world['run'].pk}/", "/ws/runs/"):
        socket = await feed_socket(path, role, world["token"])
        connected, _ = await socket.connect()
        assert connected == (RANK[role] >= 0), (role, path)
        if connected:
            # The feed only tells; it takes no orders, and no events.
            await socket.send_json_to({"type": "directive", "action": "stop"})
            assert (await socket.receive_json_from(timeout=5))["type"] == "error"
            await socket.send_json_to(
                {
                    "type": "events",
                    "v": 1,
                    "events": [
                        {
                            k: v
                            for k, v in event(world["run"].pk, 50, "note", {"text": "from a page"}).items()
                            if k not in ("type", "v")
                        }
                    ],
                }
            )
            assert (await socket.receive_json_from(timeout=5))["type"] == "error"
        await socket.disconnect()
    worker_path_socket = await feed_socket("/ws/worker/", role, world["token"])
    connected, _ = await worker_path_socket.connect()
    assert connected == (role == "worker"), role
    await worker_path_socket.disconnect()
    assert (await sync_to_async(Run.objects.get)(pk=world["run"].pk)).status == RunStatus.RUNNING


async def test_a_browser_socket_from_another_sites_page_is_refused(world):
    client = Client()
    await sync_to_async(client.force_login)(await sync_to_async(make_user)("eve-victim", "operator"))
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    for origin in (b"http://evil.example", b"null", b"http://localhost.evil.example"):
        socket = WebsocketCommunicator(
            application, "/ws/runs/", headers=[(b"origin", origin), (b"host", b"localhost"), cookie]
        )
        connected, _ = await socket.connect()
        assert not connected, origin


async def test_a_worker_token_is_scoped_to_its_hosts_runs_and_stored_only_as_a_hash(world):
    _, other_token = await sync_to_async(make_worker)("gpu-b")
    hosts = await sync_to_async(list)(WorkerHost.objects.values_list("token_hash", "token_prefix"))
    for token_hash, prefix in hosts:
        assert world["token"] not in (token_hash, prefix) and other_token not in (token_hash, prefix)
        assert len(token_hash) == 64
    socket = WebsocketCommunicator(
        application, "/ws/worker/", headers=WORKER_HEADERS + [(b"authorization", f"Bearer {other_token}".encode())]
    )
    assert (await socket.connect())[0]
    await socket.send_json_to(
        {"type": "hello", "v": 1, "host": "gpu-b", "gpus": [], "targets": ["cpu"], "active_runs": []}
    )
    assert (await socket.receive_json_from(timeout=5))["type"] == "welcome"
    await socket.send_json_to(event(world["run"].pk, 9, "status", {"status": "stopped", "reason": "stopped_by_human"}))
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "nack" and reply["retry"] is False and "not assigned" in reply["error"]
    # The same events in a batch (`events`) are refused one by one, with the same reason.
    stop = {
        k: v
        for k, v in event(world["run"].pk, 9, "status", {"status": "stopped", "reason": "stopped_by_human"}).items()
        if k not in ("type", "v")
    }
    note = {
        k: v for k, v in event(world["run"].pk, 10, "note", {"text": "not yours"}).items() if k not in ("type", "v")
    }
    await socket.send_json_to({"type": "events", "v": 1, "events": [stop, note]})
    replies = [await socket.receive_json_from(timeout=5) for _ in range(2)]
    assert sorted(r["seq"] for r in replies) == [9, 10]
    assert all(r["type"] == "nack" and r["retry"] is False and "not assigned" in r["error"] for r in replies), replies
    await socket.send_json_to({"type": "directive_ack", "v": 1, "id": "d-1"})
    assert (await socket.receive_json_from(timeout=5))["type"] == "error"
    await socket.disconnect()
    assert (await sync_to_async(Run.objects.get)(pk=world["run"].pk)).status == RunStatus.RUNNING
    assert not await sync_to_async(Step.objects.filter(run=world["run"], seq__in=[9, 10]).exists)()


async def test_a_revoked_token_stops_working_at_once_even_for_an_open_socket_on_reconnect(world):
    from runs.services import worker_host_revoke

    await sync_to_async(worker_host_revoke)(host=world["host"])
    socket = WebsocketCommunicator(
        application, "/ws/worker/", headers=WORKER_HEADERS + [(b"authorization", f"Bearer {world['token']}".encode())]
    )
    connected, _ = await socket.connect()
    assert not connected
