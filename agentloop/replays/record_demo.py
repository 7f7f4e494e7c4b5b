"""Records agentloop/replays/matmul_cpu_demo.jsonl: a SCRIPTED demo run (the model's turns are written below by
hand, not produced by a model) on the CPU task, with the real harness judging every kernel.

It exists so that `python -m agentloop run --model replay:agentloop/replays/matmul_cpu_demo.jsonl` shows the
whole machinery offline: tools, evaluations, a claimed limit caught, a self-asked question, the goal confirmed
by a fresh full evaluation. Re-record with `python -m agentloop.replays.record_demo` after changing the event schema.
"""
from __future__ import annotations

import sys
from pathlib import Path

from agentloop.agent import Agent
from agentloop.config import Budgets, Goal, RunConfig
from agentloop.console import ConsoleSink
from agentloop.models import ModelReply, Usage
from agentloop.trace import TraceWriter

HERE = Path(__file__).resolve().parent
OUT = HERE / "matmul_cpu_demo.jsonl"

# A deliberately slow start: the textbook i-j-k order walks B down its columns, one cache line per element.
SLOW = """// matmul_cpu demo starting kernel: C = A @ B in the textbook i-j-k order (B is walked down its columns).
#include <cstddef>

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    if (m < 0 || n < 0 || k < 0) return 1;
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0.0f;
            for (int p = 0; p < k; ++p) s += a[(size_t)i * k + p] * b[(size_t)p * n + j];
            c[(size_t)i * n + j] = s;
        }
    return 0;
}
"""

IKJ = """// i-k-j order: the inner loop walks a row of B and a row of C contiguously, so it vectorises.
#include <cstddef>

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    if (m < 0 || n < 0 || k < 0) return 1;
    for (int i = 0; i < m; ++i) {
        float* crow = c + (size_t)i * n;
        for (int j = 0; j < n; ++j) crow[j] = 0.0f;
        for (int p = 0; p < k; ++p) {
            const float aip = a[(size_t)i * k + p];
            const float* brow = b + (size_t)p * n;
            for (int j = 0; j < n; ++j) crow[j] += aip * brow[j];
        }
    }
    return 0;
}
"""


def t(text):
    return {"type": "text", "text": text}


def use(ident, name, tool_input):
    return {"type": "tool_use", "id": ident, "name": name, "input": tool_input}


TURNS = [
    [t("Let me look at the workspace and the kernel."), use("toolu_demo_01", "shell", {"command": "ls -l && cat kernel.cpp"})],
    [t("First, a baseline measurement."), use("toolu_demo_02", "evaluate", {"scenarios": "quick"})],
    [t("The kernel is a plain triple loop; it is memory-bound, so there is little headroom and this is close to "
       "the hardware limit. I will stop here.")],
    [t("Fair question: every step of the inner loop reads B[p][j] for a new p, i.e. a new cache line, so each "
       "element of B travels from memory n times per row of A. Swapping the two inner loops makes the inner loop "
       "walk rows of B and C contiguously."),
     use("toolu_demo_03", "editor", {"command": "create", "path": "kernel.cpp", "file_text": IKJ})],
    [use("toolu_demo_04", "evaluate", {"scenarios": "quick"})],
]
SELECTIONS = ["QUESTION: layer-memory-or-arithmetic\nREASON: The claim of a limit rests on no measurement of how "
              "often each byte of B is fetched."]


class ScriptedModel:
    name = "scripted-demo"

    def __init__(self):
        self.turns = list(TURNS)
        self.selections = list(SELECTIONS)

    def query(self, system, messages, tools, purpose):
        if purpose == "select_question":
            return ModelReply([t(self.selections.pop(0))], "end_turn", self.name, Usage(900, 40))
        content = self.turns.pop(0)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return ModelReply(content, stop, self.name, Usage(2000 + 500 * (len(TURNS) - len(self.turns)), 150))


def main() -> int:
    OUT.unlink(missing_ok=True)
    config = RunConfig(task="matmul_cpu", goal=Goal("naive", 0.7), model="scripted-demo", starting_kernel=SLOW,
                       kernel_filename="kernel.cpp", budgets=Budgets(steps=12, evaluations=6))
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        trace = TraceWriter(OUT)
        agent = Agent(run_id="demo", config=config, workspace=Path(tmp) / "ws", model=ScriptedModel(),
                      sinks=[trace, ConsoleSink()], use_bwrap=False)
        outcome = agent.run()
        trace.close()
    print(outcome, file=sys.stderr)
    return 0 if outcome.status == "succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
