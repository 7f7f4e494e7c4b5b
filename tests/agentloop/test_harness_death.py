"""A harness that dies while it holds a request (the kernel may have killed it) gives no verdict; the loop records
one anyway, an `evaluation` of status error on that source with its hash and text, and tells the model plainly
what happened (hostile-model audit, finding 10: the model read "the harness failed (exit code 137): " and the
kernel that did it was nowhere on the record)."""

import hashlib
import sys

from agentloop.config import Budgets
from agentloop.evaluator import HarnessEvaluator, how_it_ended
from agentloop.event_types import payload_problem
from agentloop.sandbox import Sandbox
from agentloop.trace import read_trace
from gpu_harness import EvalResult
from tests.agentloop.helpers import anthropic_model, make_agent, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, tool_use

# In the harness's place: reads one request, says something in its log, and dies of SIGKILL.
DIES = (
    "import os, signal, sys; sys.stdin.readline(); print('child ran the kernel', file=sys.stderr, flush=True); "
    "os.kill(os.getpid(), signal.SIGKILL)"
)
CHEAT = '// cheat\nextern "C" int kseek_matmul(const float*, const float*, float*, int, int, int) { return 0; }\n'


class DyingHarness(HarnessEvaluator):
    service_argv = [sys.executable, "-c", DIES]


def test_a_harness_that_dies_on_a_kernel_leaves_an_error_evaluation_of_that_source_and_a_plain_answer(tmp_path):
    turns = [
        Reply([tool_use("editor", {"command": "create", "path": "cheat.cpp", "file_text": CHEAT})]),
        Reply([tool_use("evaluate", {"kernel": "cheat.cpp"})]),
        Reply([tool_use("shell", {"command": "echo still here"})]),
    ]
    evaluator = DyingHarness(timeout_s=60, sandbox=Sandbox.choose(unsandboxed=True))
    try:
        with MessagesServer(Script(turns)) as server:
            agent, trace = make_agent(
                tmp_path, anthropic_model(server), config=make_config(budgets=Budgets(steps=3)), evaluator=evaluator
            )
            outcome = agent.run()
            trace.close()
    finally:
        evaluator.close()
    assert outcome.reason == "budget_steps"
    events = read_trace(tmp_path / "trace.jsonl")
    [evaluation] = payloads(events, "evaluation")
    assert payload_problem("evaluation", evaluation) is None
    result = evaluation["result"]
    assert evaluation["purpose"] == "tool" and evaluation["kernel_path"] == "cheat.cpp"
    assert result["status"] == "error" and result["kernel_source"] == CHEAT
    assert evaluation["kernel_sha256"] == result["kernel_sha256"] == hashlib.sha256(CHEAT.encode()).hexdigest()
    assert result["reason"] == "the harness process died (signal 9) while evaluating this kernel; no verdict"
    assert EvalResult.from_dict(result).status == "error"  # what the server and every reader read it with
    assert not evaluation["goal_met"] and evaluation["evaluations_used"] == 1
    answer = [p for p in payloads(events, "tool_result") if p["name"] == "evaluate"][0]
    assert answer["is_error"] and answer["output"].startswith(
        "error: the harness process died (signal 9) while evaluating cheat.cpp, so there is no verdict"
    )
    assert "child ran the kernel" in answer["output"]


def test_an_exit_status_is_told_in_words():
    assert how_it_ended(-9) == how_it_ended(137) == "the harness process died (signal 9)"
    assert how_it_ended(3) == "the harness process ended (exit code 3)"
