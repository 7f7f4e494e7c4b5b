"""A run's state, rebuilt from its events: the conversation, counters for the budgets, the evaluations the
detectors look at, the questions asked.

The loop keeps this object by applying every event it emits (`apply`); resuming a run applies the events of its
trace. One code path for both means a resumed run continues exactly where the trace says it was.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from agentloop.config import RunConfig
from agentloop.protocol import FINISHED_STATUSES
from questionbank.selection import AskedQuestion


@dataclass
class EvalRecord:
    number: int  # 1-based among all evaluations of the run
    purpose: str  # "tool" or "goal_check"
    status: str
    all_correct: bool
    speedup: float | None  # over the goal baseline, when measured
    full: bool
    goal_met: bool
    kernel_sha256: str
    best_after: float | None  # the run's best speedup (of its all-correct verdicts, quick or full) after this one
    gain: bool  # it raised the run's best speedup
    libraries_complete: bool = True  # False: it missed a library of a best_library goal (no check can confirm it)

    @property
    def failed(self) -> bool:
        return self.status in ("error", "incorrect") or (self.status == "correct" and not self.all_correct)


@dataclass
class RunState:
    config: RunConfig | None = None
    system_prompt: str = ""
    status: str = "queued"
    started_ts: str | None = None
    last_ts: str | None = None
    messages: list[dict[str, Any]] = field(
        default_factory=list
    )  # {"role", "content": [blocks]}, adjacent roles unmerged
    steps: int = 0  # model turns taken
    model_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    evaluations: list[EvalRecord] = field(default_factory=list)
    best_speedup: float | None = None
    goal_met: bool = False
    finished: bool = False
    final_reason: str | None = None
    asked: list[AskedQuestion] = field(default_factory=list)
    proposals: dict[str, dict[str, Any]] = field(default_factory=dict)  # question_ref -> question_proposed payload
    pending_question: dict[str, Any] | None = None  # proposed, not yet decided
    open_tool_calls: list[dict[str, Any]] = field(
        default_factory=list
    )  # tool_use blocks of the last turn without result
    last_fired: dict[str, int] = field(default_factory=dict)  # decision point -> tool evaluations when it fired
    questions_proposed: int = 0
    last_turn: dict[str, Any] | None = None  # the last model_message payload (purpose turn)
    # Where the step of the last turn stands (reset by each turn), so that a run cut off mid-step finishes it:
    turn_evaluations: int = 0  # the model's evaluations since the last turn
    turn_fired: list[str] = field(default_factory=list)  # decision points fired since the last turn
    open_decision: str | None = None  # the decision point being asked about, no question asked yet
    open_attempts: int = 0  # proposals made at open_decision
    goal_check_due: str | None = None  # kernel path of a tool verdict that met the target, not yet checked
    invalid_inputs_in_a_row: int = 0  # the model's latest tool calls whose input was not a JSON object
    budget_spent: str | None = None  # a budget a tool call was refused for ("evaluations"): the run ends on it
    # libraries of a best_library goal that a verdict of this run could not run at all (not installed where it
    # ran) -> the verdict's note: the goal cannot be met there, and the run ends on it (Scoreboard.check_reachable)
    libraries_unavailable: dict[str, str] = field(default_factory=dict)
    fork: dict[str, Any] | None = None  # the `fork` of the started config: this run continues another's (docs/fork.md)
    fork_decided: bool = False  # the fork's decision at its question is recorded (or it had none to take)
    usage_due: dict[str, Any] | None = (
        None  # the last model call ({purpose, model, usage}) while its usage event is missing
    )

    # ---- derived ----
    @property
    def tool_evaluations(self) -> list[EvalRecord]:
        return [e for e in self.evaluations if e.purpose == "tool"]

    def wall_s(self, now: _dt.datetime | None = None) -> float:
        if not self.started_ts:
            return 0.0
        now = now or _dt.datetime.now(_dt.UTC)
        return (now - _dt.datetime.fromisoformat(self.started_ts)).total_seconds()

    def evaluated(self, sha256: str) -> list[EvalRecord]:
        return [e for e in self.evaluations if e.kernel_sha256 == sha256]

    @property
    def model_has_last_word(self) -> bool:
        """The model ended its turn and nothing was said to it since: the conversation cannot be sent as it is."""
        return bool(self.messages) and self.messages[-1]["role"] == "assistant"

    # ---- applying events ----
    def apply(self, event: dict[str, Any]) -> None:
        kind, p = event["kind"], event["payload"]
        self.last_ts = event.get("ts") or self.last_ts
        handler = getattr(self, "_on_" + kind, None)
        if handler is not None:
            handler(p, event)

    def _user(self, block: dict[str, Any]) -> None:
        self.messages.append({"role": "user", "content": [block]})

    def _on_status(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        if p.get("reason") == "started" and p.get("config"):
            self.config = RunConfig.from_dict(p["config"])
            self.system_prompt = p["config"].get("system_prompt", "")
            self.started_ts = event.get("ts")
            fork = p["config"].get("fork")
            if isinstance(fork, dict):  # a fork starts from its parent's conversation, which holds the task prompt
                self.fork = fork
                self.fork_decided = not fork.get("decision")
                self.messages.extend(
                    {"role": m["role"], "content": [dict(b) for b in m["content"]]} for m in fork["conversation"]
                )
            else:
                self._user({"type": "text", "text": p["config"].get("task_prompt", "")})
        self.status = p["status"]
        if p["status"] in FINISHED_STATUSES:
            self.finished = True
            self.final_reason = p.get("reason")

    def _on_model_message(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        if isinstance(p.get("usage"), dict):  # (older traces hold the usage in the usage event only)
            self.usage_due = {"purpose": p.get("purpose", "turn"), "model": p.get("model"), "usage": p["usage"]}
        if p.get("purpose") != "turn":
            return
        self.steps += 1
        self.last_turn = p
        self.messages.append({"role": "assistant", "content": list(p.get("content") or [])})
        self.open_tool_calls = [b for b in p.get("content") or [] if b.get("type") == "tool_use"]
        self.turn_evaluations, self.turn_fired, self.open_decision, self.open_attempts = 0, [], None, 0
        self.goal_check_due = None

    def _on_tool_call(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        self.goal_check_due = None  # the loop checks a verdict's goal before it runs the next tool

    def _on_tool_result(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        self._user(
            {
                "type": "tool_result",
                "tool_use_id": p["call_id"],
                "content": p.get("output", ""),
                "is_error": bool(p.get("is_error")),
            }
        )
        self.open_tool_calls = [b for b in self.open_tool_calls if b.get("id") != p["call_id"]]
        if p.get("budget_spent"):
            self.budget_spent = p["budget_spent"]
        if p.get("invalid_input"):
            self.invalid_inputs_in_a_row += 1
        elif not p.get("interrupted"):
            self.invalid_inputs_in_a_row = 0

    def _on_evaluation(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        result = p.get("result") or {}
        from agentloop.goal import all_correct, worth_a_goal_check
        from gpu_harness.figures import best_so_far, libraries_complete, libraries_unavailable

        speedup = p.get("speedup")  # over the run's goal baseline, as the loop measured it
        correct = all_correct(result)
        goal = self.config.goal if self.config is not None else None
        complete = goal is None or libraries_complete(result, goal.baseline, [])  # the verdict's own libraries
        for name, note in (libraries_unavailable(result, goal.baseline) if goal is not None else {}).items():
            self.libraries_unavailable.setdefault(name, note)
        before = self.best_speedup
        self.best_speedup = best_so_far(before, speedup if correct else None)
        self.evaluations.append(
            EvalRecord(
                number=len(self.evaluations) + 1,
                purpose=p.get("purpose", "tool"),
                status=result.get("status", "error"),
                all_correct=correct,
                speedup=speedup,
                full=bool(p.get("full")),
                goal_met=bool(p.get("goal_met")),
                kernel_sha256=p.get("kernel_sha256") or result.get("kernel_sha256", ""),
                best_after=self.best_speedup,
                gain=self.best_speedup != before,
                libraries_complete=complete,
            )
        )
        if p.get("goal_met"):
            self.goal_met = True
        if p.get("purpose", "tool") == "tool":
            self.turn_evaluations += 1
            config = self.config
            # the scoreboard's test (Scoreboard.worth_confirming) over the verdict's own libraries: the loop asks for
            # the task's default baselines, which `task check` requires to hold every library of a best_library goal
            if config is not None and not p.get("goal_met") and worth_a_goal_check(result, config.goal, []):
                self.goal_check_due = p.get("kernel_path") or config.kernel_filename
            else:
                self.goal_check_due = None
        else:
            self.goal_check_due = None

    def _on_decision_point(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        self.last_fired[p["name"]] = len(self.tool_evaluations)
        if not self.turn_fired:  # of decision points fired together, the first is the one asked about
            self.open_decision, self.open_attempts = p["name"], 0
        self.turn_fired.append(p["name"])

    def _on_question_proposed(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        self.questions_proposed += 1
        self.proposals[p["question_ref"]] = p
        self.pending_question = p
        if p.get("decision_point") == self.open_decision:
            self.open_attempts = int(p.get("attempt") or 0) + 1

    def _on_question_decided(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        if p.get("fork_decision"):
            self.fork_decided = True
        proposal = self.proposals.get(p["question_ref"], {})
        if self.pending_question and self.pending_question.get("question_ref") == p["question_ref"]:
            self.pending_question = None
        vetoed = p["action"] == "veto"
        if proposal.get("bank_key"):
            self.asked.append(
                AskedQuestion(
                    key=proposal["bank_key"],
                    decision_point=proposal.get("decision_point", ""),
                    step=self.steps,
                    vetoed=vetoed,
                )
            )
        if not vetoed and p.get("text"):
            self._user({"type": "text", "text": p["text"]})
        if not vetoed:
            self.open_decision = None

    def _on_human_message(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        self._user({"type": "text", "text": p["text"]})

    def _on_note(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        if p.get("fork_decision"):
            self.fork_decided = True
        if p.get("to_model"):
            self._user({"type": "text", "text": p["text"]})
        if p.get("decision_point") and p["decision_point"] == self.open_decision:
            self.open_decision = None  # the loop gave up asking at it (no eligible question, or all vetoed)

    def _on_usage(self, p: dict[str, Any], event: dict[str, Any]) -> None:
        self.usage_due = None
        self.model_calls += 1
        self.tokens_in += int(p.get("tokens_in") or 0)
        self.tokens_out += int(p.get("tokens_out") or 0)
        if p.get("cost_usd") is None:
            self.cost_known = False
        else:
            self.cost_usd += float(p["cost_usd"])


def api_block(block: dict[str, Any]) -> dict[str, Any] | None:
    """A content block as the Messages API accepts it back, or None to leave it out.

    The trace keeps what the model sent; the API refuses a tool_use whose input is not an object or that carries
    fields of ours (`raw_input`), and an empty text block."""
    kind = block.get("type")
    if kind == "tool_use":
        tool_input = block.get("input")
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block.get("name") or "",
            "input": tool_input if isinstance(tool_input, dict) and "raw_input" not in block else {},
        }
    if kind == "text" and not (block.get("text") or "").strip():
        return None
    return dict(block)


def api_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as the Messages API wants it: roles alternating (adjacent same-role turns merged), tool
    results first in their message, no empty turn."""
    out: list[dict[str, Any]] = []
    for m in messages:
        content = [b for b in map(api_block, m["content"]) if b is not None]
        if out and out[-1]["role"] == m["role"]:
            out[-1]["content"].extend(content)
        else:
            out.append({"role": m["role"], "content": content})
    for m in out:
        m["content"].sort(key=lambda b: b.get("type") != "tool_result")  # stable: the rest keep their order
        m["content"] = m["content"] or [{"type": "text", "text": "(no text)"}]
    return out
