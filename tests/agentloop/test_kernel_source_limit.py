"""The protocol's limit on a kernel source (agentloop.protocol.KERNEL_SOURCE_MAX_BYTES) on the worker's side: the
loop does not evaluate a larger file, tells the model the limit, and so never sends an evaluation the server would
refuse (the server's side: tests/reliability/test_kernel_source_limit.py)."""

from agentloop.config import Budgets
from agentloop.protocol import KERNEL_SOURCE_MAX_BYTES
from agentloop.trace import read_trace
from tests.agentloop.helpers import ScriptedEvaluator, anthropic_model, make_agent, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, text, tool_use


def grow_kernel_to(size: int) -> dict:
    return tool_use("shell", {"command": f"head -c {size} /dev/zero | tr '\\0' 'x' > kernel.cpp && wc -c kernel.cpp"})


def test_a_kernel_over_the_source_limit_is_not_evaluated_and_the_model_is_told_the_limit(tmp_path):
    evaluator = ScriptedEvaluator()
    turns = [
        Reply([grow_kernel_to(KERNEL_SOURCE_MAX_BYTES + 1)]),
        Reply([tool_use("evaluate", {"scenarios": "full"})]),
        Reply([text("The kernel is done.")]),  # the end of a turn: the loop's own goal check would evaluate it
    ]
    with MessagesServer(Script(turns)) as server:
        agent, trace = make_agent(
            tmp_path, anthropic_model(server), config=make_config(budgets=Budgets(steps=3)), evaluator=evaluator
        )
        agent.run()
        trace.close()
    events = read_trace(tmp_path / "trace.jsonl")
    assert evaluator.calls == [] and payloads(events, "evaluation") == []
    [answer] = [p for p in payloads(events, "tool_result") if p["name"] == "evaluate"]
    assert answer["is_error"] and f"over the limit of {KERNEL_SOURCE_MAX_BYTES:,} bytes" in answer["output"]
    assert f"{KERNEL_SOURCE_MAX_BYTES + 1:,} bytes" in answer["output"]
    notes = [p["text"] for p in payloads(events, "note")]
    assert any(n.startswith("the goal check could not run: kernel.cpp is not evaluated") for n in notes), notes


def test_a_kernel_at_the_source_limit_is_evaluated(tmp_path):
    evaluator = ScriptedEvaluator()
    turns = [Reply([grow_kernel_to(KERNEL_SOURCE_MAX_BYTES)]), Reply([tool_use("evaluate", {"scenarios": "quick"})])]
    with MessagesServer(Script(turns)) as server:
        agent, trace = make_agent(
            tmp_path, anthropic_model(server), config=make_config(budgets=Budgets(steps=2)), evaluator=evaluator
        )
        agent.run()
        trace.close()
    [evaluation] = payloads(read_trace(tmp_path / "trace.jsonl"), "evaluation")
    assert len(evaluation["result"]["kernel_source"]) == KERNEL_SOURCE_MAX_BYTES
