"""docs/protocol.md 2.9's sessions, played against the server: each `worker:` line of the document is sent as it
is written there, and each `server:` line is what comes back (an elided `…` object is compared by its type)."""

import json
import re
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from runs.services import hello_targets
from tests.dashboard.helpers import make_worker, worker_socket
from tests.foundation.factories import make_run, make_task

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def section(number: str) -> str:
    text = PROTOCOL.read_text(encoding="utf-8")
    start = text.index(f"### {number} ")
    end = text.find("\n### ", start + 1)
    return text[start : end if end != -1 else len(text)]


def sessions(text: str) -> list[list[tuple[str, str]]]:
    """Each ``` block of `worker:`/`server:` lines, as (side, raw JSON text) pairs."""
    blocks = re.findall(r"```\n(.*?)```", text, flags=re.S)
    return [
        [tuple(line.split(": ", 1)) for line in block.splitlines() if line.startswith(("worker: ", "server: "))]
        for block in blocks
        if "worker: " in block
    ]


def test_section_2_9_has_the_two_sessions_and_2_5_announces_targets():
    found = sessions(section("2.9"))
    assert len(found) == 2
    hello = json.loads(next(raw for side, raw in sessions(section("2.5"))[0] if side == "worker"))
    assert hello_targets(hello["targets"]) == (["cpu", "cuda-sm90"], None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("index", [0, 1])
async def test_a_session_of_section_2_9_goes_as_written(index):
    lines = sessions(section("2.9"))[index]
    await sync_to_async(make_run)(task=await sync_to_async(make_task)("attention_fwd", target="cuda-sm90"))
    await sync_to_async(make_run)(task=await sync_to_async(make_task)("matmul_cpu", target="cpu"))
    first = json.loads(lines[0][1])
    _, token = await sync_to_async(make_worker)(first["host"], targets=None)
    socket = worker_socket(token)
    assert (await socket.connect())[0]
    for side, raw in lines:
        if side == "worker":
            await socket.send_json_to(json.loads(raw))
            continue
        reply = await socket.receive_json_from(timeout=5)
        if "…" in raw:  # an elided object: its type, and the task where the document names one
            assert reply["type"] == re.search(r'"type":"(\w+)"', raw).group(1), reply
            task = re.search(r'"task":"(\w+)"', raw)
            if task:
                assert reply["run"]["task"] == task.group(1)
        else:
            assert reply == json.loads(raw)
    assert await socket.receive_nothing(timeout=0.2)
    await socket.disconnect()
