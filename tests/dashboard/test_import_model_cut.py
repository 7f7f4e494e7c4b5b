"""An imported run's model column keeps the trace's model id cut to Run.model's 120 characters (a `replay:` path
of `agentloop run` may be longer), as docs/protocol.md 1.3 says; its `started` event keeps the whole id."""

import io
import json

import pytest

from runs.models import Run
from runs.services import trace_import
from tests.dashboard.test_pages import envelope
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("length", [120, 121, 300])
def test_an_imported_runs_model_is_the_traces_cut_to_120_characters(length):
    make_task()
    model = "replay:/" + "d" * (length - 8)
    config = {"task": "matmul_cpu", "model": model}
    line = json.dumps(envelope(0, "status", {"status": "running", "reason": "started", "config": config}))
    run = trace_import(lines=io.BytesIO(line.encode() + b"\n"), name="t.jsonl")
    assert Run._meta.get_field("model").max_length == 120
    assert run.model == model[:120]
    assert run.steps.get(seq=0).payload["config"]["model"] == model
