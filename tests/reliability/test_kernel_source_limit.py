"""The protocol's limit on a kernel source (agentloop.protocol.KERNEL_SOURCE_MAX_BYTES) on the server's side, on
a live daphne: a worker's evaluation over it is refused for good with the limit named, one at it is stored, and a
trace import holding one is refused with its line (the worker's side: tests/agentloop/test_kernel_source_limit.py).
"""

import json
import re

import pytest

from agentloop.protocol import KERNEL_SOURCE_MAX_BYTES
from tests.reliability.test_dashboard_bad_input import STATUS_LINE, Browser
from tests.reliability.wire import WireWorker, note_event

pytestmark = pytest.mark.timeout(300)

LIMIT_TEXT = f"over the limit of {KERNEL_SOURCE_MAX_BYTES:,} bytes (KERNEL_SOURCE_MAX_BYTES"


def evaluation_payload(source: str) -> dict:
    result = {
        "task": "matmul_cpu",
        "status": "correct",
        "reason": None,
        "kernel_source": source,
        "scenarios": [],
        "geomean": {},
        "host": "wire",
        "device_name": "cpu",
    }
    return {"purpose": "tool", "scenario_set": "quick", "kernel_path": "kernel.cpp", "result": result}


def source_of(size: int) -> str:
    return "// " + "x" * (size - 4) + "\n"


def test_a_workers_evaluation_over_the_kernel_source_limit_is_refused_for_good_and_one_at_it_is_stored(site):
    port = site.start_server()
    worker = WireWorker(port, site.worker_token("gpu-a"))
    site.queue_demo_run()
    run_id = worker.claim()
    for seq, size in ((0, KERNEL_SOURCE_MAX_BYTES), (1, KERNEL_SOURCE_MAX_BYTES + 1)):
        worker.send(note_event(run_id, seq) | {"kind": "evaluation", "payload": evaluation_payload(source_of(size))})
    at_limit, over = worker.replies_for(2)
    worker.close()
    assert at_limit["type"] == "ack", at_limit
    assert over["type"] == "nack" and over["retry"] is False and LIMIT_TEXT in over["error"], over
    assert f"{KERNEL_SOURCE_MAX_BYTES + 1:,} bytes" in over["error"]
    assert site.query("select length(source) from runs_kernel") == [(KERNEL_SOURCE_MAX_BYTES,)]
    refused = site.query("select seq, kind, error from runs_refusedevent where run_id = ?", (run_id,))
    assert [(seq, kind) for seq, kind, _ in refused] == [(1, "evaluation")] and LIMIT_TEXT in refused[0][2]


def test_a_trace_import_with_a_two_megabyte_kernel_source_is_refused_naming_the_limit_and_the_line(site):
    # (within the limit on an event, 4 MiB: a line over it is refused before its source is read, docs/protocol.md 1.3)
    port = site.start_server()
    browser = Browser(site, port)
    evaluation = {
        "v": 1,
        "run_id": "local-1",
        "seq": 1,
        "kind": "evaluation",
        "ts": "2026-11-30T12:00:01+00:00",
        "payload": evaluation_payload(source_of(2 * 2**20)),
        "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
    }
    status, page = browser.upload_trace(f"{STATUS_LINE}\n{json.dumps(evaluation)}\n".encode())
    assert status == 400 and "line 2 (seq 1):" in page and LIMIT_TEXT in page, re.findall('class="errorlist.*', page)
    assert site.query("select count(*) from runs_run")[0][0] == 0
    assert site.query("select count(*) from runs_kernel")[0][0] == 0
