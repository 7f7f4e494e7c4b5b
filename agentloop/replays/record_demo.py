"""Records agentloop/replays/matmul_cpu_demo.jsonl: a SCRIPTED demo run (the model's turns are written below by
hand, not produced by a model) on the CPU task, with the real harness judging every kernel.

It exists so that `python -m agentloop run --model replay:agentloop/replays/matmul_cpu_demo.jsonl` shows the
whole machinery offline: tools, evaluations, a claimed limit caught, a self-asked question, the goal confirmed
by a fresh full evaluation. Re-record with `python -m agentloop.replays.record_demo` after changing the event schema.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentloop.agent import Agent, Host
from agentloop.config import Budgets, Goal, RunConfig
from agentloop.console import ConsoleSink
from agentloop.interfaces import Model
from agentloop.models import ModelReply, Usage
from agentloop.sandbox import Sandbox
from agentloop.trace import TraceWriter

HERE = Path(__file__).resolve().parent
OUT = HERE / "matmul_cpu_demo.jsonl"

# A deliberately slow start: every access walks down a column (j outermost, i innermost), so each load of A and
# each update of C touches a new cache line and nothing vectorises: about 7x slower than the task's naive
# baseline (geometric mean over the full set; 0.145x measured on a 2-core build machine), far below the goal.
SLOW = """// matmul_cpu demo starting kernel: C = A @ B with j outermost and i innermost: every access walks a column.
#include <cstddef>

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    if (m < 0 || n < 0 || k < 0) return 1;
    for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) c[(size_t)i * n + j] = 0.0f;
        for (int p = 0; p < k; ++p) {
            const float bpj = b[(size_t)p * n + j];
            for (int i = 0; i < m; ++i) c[(size_t)i * n + j] += a[(size_t)i * k + p] * bpj;
        }
    }
    return 0;
}
"""

# The end point: rows of B and C walked contiguously (the naive baseline's order), four rows of C at a time so
# that each row of B, once loaded, feeds four of them. Measured at 1.25x naive on the same machine.
FAST = """// i-k-j order, four rows of C at a time: the inner loop walks a row of B and rows of C contiguously (it
// vectorises), and each row of B, once loaded, feeds four rows of C.
#include <cstddef>

static void one_row(const float* a, const float* b, float* c, int i, int n, int k) {
    float* crow = c + (size_t)i * n;
    for (int j = 0; j < n; ++j) crow[j] = 0.0f;
    for (int p = 0; p < k; ++p) {
        const float aip = a[(size_t)i * k + p];
        const float* brow = b + (size_t)p * n;
        for (int j = 0; j < n; ++j) crow[j] += aip * brow[j];
    }
}

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    if (m < 0 || n < 0 || k < 0) return 1;
    int i = 0;
    for (; i + 4 <= m; i += 4) {
        float* __restrict c0 = c + (size_t)i * n;
        float* __restrict c1 = c0 + n;
        float* __restrict c2 = c1 + n;
        float* __restrict c3 = c2 + n;
        for (int j = 0; j < n; ++j) c0[j] = c1[j] = c2[j] = c3[j] = 0.0f;
        for (int p = 0; p < k; ++p) {
            const float a0 = a[(size_t)i * k + p], a1 = a[(size_t)(i + 1) * k + p];
            const float a2 = a[(size_t)(i + 2) * k + p], a3 = a[(size_t)(i + 3) * k + p];
            const float* __restrict brow = b + (size_t)p * n;
            for (int j = 0; j < n; ++j) {
                const float bj = brow[j];
                c0[j] += a0 * bj;
                c1[j] += a1 * bj;
                c2[j] += a2 * bj;
                c3[j] += a3 * bj;
            }
        }
    }
    for (; i < m; ++i) one_row(a, b, c, i, n, k);
    return 0;
}
"""
# The goal sits between the two with a wide margin on each side (0.145x and 1.25x measured, goal 0.5x), so that
# timing noise on a busy machine changes neither the path of the replay nor its outcome.
GOAL = Goal("naive", 0.5)


def t(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def use(ident: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": tool_input}


TURNS = [
    [
        t("Let me look at the workspace and the kernel."),
        use("toolu_demo_01", "shell", {"command": "ls -l && cat kernel.cpp"}),
    ],
    [t("First, a baseline measurement."), use("toolu_demo_02", "evaluate", {"scenarios": "quick"})],
    [
        t(
            "The kernel is a plain triple loop; it is memory-bound, so there is little headroom and this is close to "
            "the hardware limit. I will stop here."
        )
    ],
    [
        t(
            "Fair question. It is waiting on memory, but not because memory is slow: the inner loop walks down columns "
            "of A and C, so every multiply-add touches a new cache line and nothing vectorises. Walking rows of B and C "
            "in the inner loop makes every access contiguous, and doing four rows of C at a time makes each row of B "
            "feed four of them."
        ),
        use("toolu_demo_03", "editor", {"command": "create", "path": "kernel.cpp", "file_text": FAST}),
    ],
    [use("toolu_demo_04", "evaluate", {"scenarios": "quick"})],
]
SELECTIONS = [
    "QUESTION: layer-memory-or-arithmetic\nREASON: The claim of a limit rests on no measurement of what "
    "the loop is waiting on."
]


class ScriptedModel(Model):
    name = "scripted-demo"

    def __init__(self) -> None:
        self.turns = list(TURNS)
        self.selections = list(SELECTIONS)

    def query(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], purpose: str
    ) -> ModelReply:
        if purpose == "select_question":
            return ModelReply([t(self.selections.pop(0))], "end_turn", self.name, Usage(900, 40))
        content = self.turns.pop(0)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return ModelReply(content, stop, self.name, Usage(2000 + 500 * (len(TURNS) - len(self.turns)), 150))


def main() -> int:
    OUT.unlink(missing_ok=True)
    config = RunConfig(
        task="matmul_cpu",
        goal=GOAL,
        model="scripted-demo",
        starting_kernel=SLOW,
        kernel_filename="kernel.cpp",
        budgets=Budgets(steps=12, evaluations=6),
    )
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        trace = TraceWriter(OUT)
        agent = Agent(
            run_id="demo",
            config=config,
            model=ScriptedModel(),
            sinks=[trace, ConsoleSink()],
            host=Host(Path(tmp) / "ws", Sandbox.choose(unsandboxed=True)),
        )
        outcome = agent.run()
        trace.close()
    print(outcome, file=sys.stderr)
    return 0 if outcome.status == "succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
