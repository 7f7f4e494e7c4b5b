"""Builders shared by the dashboard tests: users with roles, worker sockets, protocol events."""

from datetime import UTC, datetime

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from kseek_site.asgi import application
from runs.services import worker_hello, worker_host_create

BROWSER_HEADERS = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
WORKER_HEADERS = [(b"host", b"localhost")]  # a worker is not a browser: no Origin, no cookie


def make_user(name: str, role: str | None = None, **extra):
    user = get_user_model().objects.create_user(name, password="pw-123456789", **extra)
    if role:
        # get_or_create: transactional tests flush the groups that migration 0003 made.
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


# What the workers of these tests serve unless a test says otherwise: every task target (runs.models.Target).
ALL_TARGETS = ["cpu", "cuda-sm90"]


def make_worker(name: str = "gpu-a", targets: list[str] | None = ALL_TARGETS):
    """A host with a token, as after a hello that announced `targets` (None: a host that never said hello, which
    serves no target and is given no run)."""
    host, token = worker_host_create(name=name, gpus=["NVIDIA H200"])
    if targets is not None:
        host = worker_hello(worker=host, gpus=host.gpus, targets=list(targets))
    return host, token


def worker_socket(token: str | None) -> WebsocketCommunicator:
    headers = list(WORKER_HEADERS)
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    return WebsocketCommunicator(application, "/ws/worker/", headers=headers)


def _runs_held_by(token: str) -> list[int]:
    from runs.models import Run
    from runs.services import HELD_STATUSES, hash_token

    return list(
        Run.objects.filter(worker__token_hash=hash_token(token), status__in=HELD_STATUSES).values_list("pk", flat=True)
    )


async def connected_worker(
    token: str, *, hello: bool = True, holding: list[int] | None = None, targets: list[str] = ALL_TARGETS
) -> WebsocketCommunicator:
    """A worker socket, greeted. Its hello lists the runs it still has (`holding`), by default every run the
    server gave this host, as a worker that lost nothing says (runs.services.worker_runs_reconcile), and the
    targets it serves (`targets`, by default all)."""
    socket = worker_socket(token)
    connected, code = await socket.connect()
    assert connected, code
    if holding is None:
        holding = await sync_to_async(_runs_held_by)(token)
    if hello:
        await socket.send_json_to(
            {
                "type": "hello",
                "v": 1,
                "host": "gpu-a",
                "gpus": ["NVIDIA H200"],
                "targets": list(targets),
                "active_runs": [{"run_id": run_id, "last_seq": None} for run_id in holding],
            }
        )
        assert (await socket.receive_json_from(timeout=5))["type"] == "welcome"
    return socket


def event(run_id, seq: int, kind: str, payload: dict, **usage) -> dict:
    return {
        "type": "event",
        "v": 1,
        "run_id": run_id,
        "seq": seq,
        "kind": kind,
        "ts": datetime(2026, 11, 30, 12, 0, seq % 60, tzinfo=UTC).isoformat(),
        "payload": payload,
        "usage": {
            "tokens_in": usage.get("tokens_in", 0),
            "tokens_out": usage.get("tokens_out", 0),
            "cost_usd": usage.get("cost_usd", 0),
        },
    }


def usage_event(run_id, seq: int, *, tokens_in: int = 0, tokens_out: int = 0, cost_usd: float | None = 0) -> dict:
    """An `event` message of a model call's `usage`: the only kind whose counts and cost a run's totals take, its
    envelope repeating its payload's (docs/protocol.md 1.1)."""
    counts = {"tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": cost_usd}
    return event(run_id, seq, "usage", {"purpose": "turn", "model": "m", **counts}, **counts)


def eval_result(speedup: float | None, *, correct: bool = True, source: str = "// fast\n", failing: str | None = None):
    """An EvalResult.to_dict()-shaped verdict over two scenarios."""
    scenarios = []
    for sid, n in (("n256", 256), ("n512", 512)):
        ok = correct and sid != failing
        scenarios.append(
            {
                "id": sid,
                "params": {"n": n, "dtype": "float32"},
                "correct": ok,
                "error": 1e-6 if ok else 0.5,
                "reason": None if ok else "wrong values",
                "time_ms": 1.5,
                "tflops": 0.1,
                "speedup": {"naive": speedup},
            }
        )
    status = "correct" if correct and failing is None else "incorrect"
    return {
        "task": "matmul_cpu",
        "kernel_sha256": "",
        "kernel_source": source,
        "status": status,
        "reason": None,
        "host": "gpu-a",
        "device_name": "cpu",
        "scenarios": scenarios,
        "geomean": {"naive": {"speedup": speedup if status == "correct" else None, "count": 2}},
        "started_at": "2026-11-30T12:00:00+00:00",
        "finished_at": "2026-11-30T12:00:05+00:00",
    }


def evaluation_payload(speedup, **kwargs) -> dict:
    result = eval_result(speedup, **kwargs)
    return {
        "purpose": "tool",
        "scenario_set": "quick",
        "kernel_path": "kernel.cpp",
        "kernel_source": result["kernel_source"],
        "result": result,
        "speedup": speedup,
    }


def question_payload(ref: str, text: str = "What limits the kernel now?") -> dict:
    return {
        "question_ref": ref,
        "bank_key": "",
        "text": text,
        "category": "limit",
        "reason": "it plateaued",
        "decision_point": "plateau",
        "by": "model",
        "attempt": 0,
    }


async def login_cookie(client, user) -> str:
    await sync_to_async(client.force_login)(user)
    return client.cookies["sessionid"].value


@pytest.fixture
def api_models_configured(monkeypatch):
    """The server's environment as on a site whose workers hold an Anthropic key and an OpenAI-compatible
    server's address: the start paths then take API model ids (runs.model_options.model_refusal). No model is
    ever called: no worker of these tests runs one."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-never-sent")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
