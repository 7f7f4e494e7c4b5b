"""The loop. One step: take the humans' directives, check the budgets, ask the model, run the tools it asked
for, look for decision points, and ask a question at one. The run ends by exception (agentloop.errors).

    agent = Agent(run_id=..., config=..., model=..., sinks=[TraceWriter(path)], host=Host(workspace, sandbox))
    outcome = agent.run()

What it talks to is declared in agentloop/interfaces.py (the model, the tools, the evaluator, the sinks); the
verdicts, the goal and the evaluation budget are kept by agentloop/scoreboard.py, the questions by
agentloop/questions.py.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from agentloop import __version__, fork_start
from agentloop.config import RunConfig
from agentloop.control import ControlInbox, Directive
from agentloop.detectors import Firing, Turn, detect
from agentloop.errors import (
    BudgetExhausted,
    GoalMet,
    InvalidToolInputs,
    ModelFailed,
    RunEnded,
    RunParked,
    StoppedByHuman,
)
from agentloop.evaluator import EvaluatorError, HarnessDied, HarnessEvaluator
from agentloop.events import Emitter
from agentloop.interfaces import Evaluator, EventSink, Model, Tool
from agentloop.kernel_file import KernelFile, read_kernel, snapshot
from agentloop.models import ModelReply
from agentloop.models.reply import received
from agentloop.policy import Policy, default_policy
from agentloop.questions import QuestionAsker
from agentloop.review import AutoApprove, InboxReviewer, Reviewer
from agentloop.sandbox import Sandbox
from agentloop.scoreboard import EVALUATIONS, Scoreboard
from agentloop.state import RunState, api_messages
from agentloop.tools import ToolInputError, ToolResult
from agentloop.tools import evaluate as evaluate_tool
from agentloop.tools.workbench import work_tools
from questionbank.bank import BankEntry, load_bank


@dataclass
class Outcome:
    status: str
    reason: str
    best_speedup: float | None
    steps: int
    events: int


# A model call whose reply was charged but never read to its end (ModelFailed.charged_unread): its tokens are not
# known, and its cost is not either (None: the run's cost is then a floor, docs/protocol.md 1.1's usage of unknown
# cost).
UNREAD_USAGE = {"tokens_in": 0, "tokens_out": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": None}

JSON_TYPES = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def invalid_input(block: dict[str, Any]) -> str | None:
    """What is wrong with a tool call's input, as the model reads it; None when the input is a JSON object. The
    model's mistake, answered as a tool error: the run goes on."""
    name = block.get("name")
    if "duplicate_of" in block:
        return (
            f"error: this call of `{name}` came without an id of its own (it had {block['duplicate_of']!r}, which "
            f"an earlier call of the same reply has, or none), so nothing was run; the loop named it "
            f"{block['id']!r}. Call the tool again: each tool call needs an id of its own."
        )
    if "too_deep" in block:
        return (
            f"error: your input for `{name}` nests objects and arrays deeper than {block['too_deep']} levels, so "
            f"nothing was run. Call the tool again with its parameters as one flat JSON object."
        )
    if "raw_input" in block:
        return (
            f"error: your input for `{name}` was not valid JSON, so nothing was run (it began: "
            f"{block['raw_input'][:300]!r}). Call the tool again with its parameters as one JSON object."
        )
    if not isinstance(block.get("input"), dict):
        kind = JSON_TYPES.get(type(block.get("input")), type(block.get("input")).__name__)
        return (
            f"error: the input of `{name}` must be a JSON object of its parameters, not a JSON {kind}, so "
            f"nothing was run. Call the tool again with its parameters as one JSON object."
        )
    return None


def tool_use_ids(messages: list[dict[str, Any]]) -> list[object]:
    """The ids of the tool calls a conversation holds."""
    return [b.get("id") for m in messages for b in m["content"] if b.get("type") == "tool_use"]


def died_verdict(task: str, kernel: KernelFile, died: HarnessDied) -> dict[str, Any]:
    """The verdict recorded when the harness died on a kernel (it gave none): status `error`, the reason in words,
    the source and its hash as every verdict carries them, so the evaluation that killed it is on the record."""
    from gpu_harness import EvalResult

    source = kernel.data.decode("utf-8", errors="replace")
    return EvalResult(
        task=task,
        kernel_sha256=kernel.sha256,
        kernel_source=source,
        status="error",
        reason=f"{died.why} while evaluating this kernel; no verdict",
        kernel_path=str(kernel.path),
    ).to_dict()


def task_facts(task_name: str) -> dict[str, Any]:
    """What the task statement shows the model about a harness task (its ABI, scenarios, baselines, and the
    libraries among them that a `best_library` goal is the fastest of)."""
    from gpu_harness import get_task

    task = get_task(task_name)
    full = [s.id for s in task.scenarios()]
    return {
        "target": task.target,  # which of the bank's questions apply (questionbank.bank.BankEntry.applies_to)
        "language": task.language,
        "abi": task.abi,
        "full_ids": full,
        "quick_ids": list(task.quick_ids()),
        "baselines": list(task.default_baselines),
        "libraries": list(task.libraries),
    }


@dataclass
class Host:
    """Where a run's tools run, as the worker or the CLI set it up for it: the folder the model works in, the
    sandbox its commands and kernels run in (agentloop/sandbox.py), and what their environment adds (the run's
    GPU: CUDA_VISIBLE_DEVICES)."""

    workspace: Path
    sandbox: Sandbox
    extra_env: dict[str, str] = field(default_factory=dict)


@dataclass
class Oversight:
    """The humans' side of a run: their directives (pause, stop, a message), the reviewer of its questions (None:
    as its config's review mode says), and the bank the questions come from (None: questionbank/bank.toml) with
    each question's figures from earlier runs."""

    reviewer: Reviewer | None = None
    inbox: ControlInbox = field(default_factory=ControlInbox)
    bank: list[BankEntry] | None = None
    question_stats: dict[str, dict[str, Any]] | None = None


class Agent:
    def __init__(
        self,
        *,
        run_id: object,
        model: Model,
        sinks: list[EventSink],
        host: Host,
        config: RunConfig | None = None,
        resume_events: list[dict[str, Any]] | None = None,
        evaluator: Evaluator | None = None,
        oversight: Oversight | None = None,
        policy: Policy | None = None,
        fork: dict[str, Any] | None = None,
    ) -> None:
        """A new run from its `config`, or the run whose trace is `resume_events`. `evaluator` None: the task's
        harness, in a process the agent starts in the host's sandbox and ends with the run. `fork`: a new run
        that continues another from one of its steps (docs/fork.md; the assignment's `fork`, checked by
        agentloop.fork.fork_problems)."""
        if (config is None) == (resume_events is None):
            raise ValueError("give either a config (a new run) or resume_events (a resumed run)")
        if fork is not None and resume_events is not None:
            raise ValueError("a resumed run takes its fork from its trace")
        self._fork = fork
        self.run_id = run_id
        self.workspace = Path(host.workspace).resolve()
        self.sandbox = host.sandbox
        self.model = model
        self.policy = policy or default_policy()
        self.state = RunState()
        self._resume_events = resume_events
        if resume_events is not None:
            for event in resume_events:
                self.state.apply(event)
            config = self.state.config
        if config is None:  # (an empty trace too: it once failed later, on config.task)
            raise ValueError("the trace has no 'started' event: nothing to resume")
        self.config = config
        oversight = oversight or Oversight()
        self.inbox = oversight.inbox
        self.emitter = Emitter(run_id, sinks, next_seq=len(resume_events or []))
        self.emitter.add_listener(self.state.apply)
        self.task_info = task_facts(config.task)
        tools = self.policy.tools
        # Ours to close when the run ends (a harness process); an evaluator given to us is the giver's.
        self._own_evaluator = None
        if evaluator is None:
            evaluator = self._own_evaluator = HarnessEvaluator(
                timeout_s=float(tools["evaluate_timeout_s"]), extra_env=host.extra_env, sandbox=self.sandbox
            )
        self.evaluator = evaluator
        self.scoreboard = Scoreboard(
            self.state, config, self.task_info["full_ids"], self.emitter.emit, libraries=self.task_info["libraries"]
        )
        shell, self.editor = work_tools(self.workspace, tools, host.extra_env, self.sandbox)
        self.tools: dict[str, Tool] = {tool.name: tool for tool in (shell, self.editor)}  # evaluate: the loop's own
        self.tool_schemas = [shell.schema, self.editor.schema, evaluate_tool.SCHEMA]
        reviewer = oversight.reviewer
        if reviewer is None or config.review_mode == "auto":
            reviewer = AutoApprove() if config.review_mode == "auto" else InboxReviewer(config.review_timeout_s)
        self.reviewer = reviewer
        self.bank = load_bank() if oversight.bank is None else oversight.bank
        settings = self.policy.detectors
        self.questions = QuestionAsker(
            state=self.state,
            emit=self.emitter.emit,
            ask_model=self._select_question,
            bank=self.bank,
            reviewer=self.reviewer,
            inbox=self.inbox,
            run_id=run_id,
            cooldown_steps=settings.cooldown_steps,
            max_proposals=settings.max_proposals,
            set_status=self._set_status,
            task_target=self.task_info["target"],
            stats=oversight.question_stats,
        )
        self._cost_warned = False
        played = (fork or self.state.fork or {}).get("played") or {}
        if resume_events or played:  # a fork of a replay goes on from where its parent was in the recording
            model.skip_played(fork_start.played_events(played) + list(resume_events or []))

        def notify(text: str) -> None:
            self.emitter.emit("note", {"text": text, "level": "warning"})

        model.notify = notify
        self.inbox.mark_seen(e["payload"].get("directive_id") for e in resume_events or [])

    # ------------------------------------------------------------------------------------------ the run
    def run(self) -> Outcome:
        try:
            if self._resume_events is None:
                self._start()
            else:
                self._resume()
            while True:
                self.step()
        except RunParked:
            raise  # not an ending: the worker resumes the run from its trace when its reviewer decides
        except RunEnded as end:
            self._finish(end.status, end.reason, str(end))
        except KeyboardInterrupt:
            self._finish("stopped", "stopped_by_human", "interrupted from the terminal")
        except Exception as exc:
            self.emitter.emit("note", {"text": "".join(traceback.format_exception(exc))[-4000:], "level": "error"})
            self._finish("failed", "internal_error", f"{type(exc).__name__}: {exc}")
        finally:
            if self._own_evaluator is not None:
                self._own_evaluator.close()
        return Outcome(
            self.state.status,
            self.state.final_reason or "",
            self.state.best_speedup,
            self.state.steps,
            self.emitter.next_seq,
        )

    def _start(self) -> None:
        self.workspace.mkdir(parents=True, exist_ok=True)
        (self.workspace / self.config.kernel_filename).write_text(self.config.starting_kernel, encoding="utf-8")
        fork_start.write_parent_files(self._fork, self.editor.resolve)
        task_prompt = self.policy.task_prompt(self.config, self.task_info)
        config = self.config.to_dict() | {
            "system_prompt": self.policy.system_prompt,
            "task_prompt": task_prompt,
            "agentloop_version": __version__,
            "sandbox": self.sandbox.mode,
        }
        if self._fork is not None:
            config["fork"] = self._fork
        self.emitter.emit("status", {"status": "running", "reason": "started", "config": config})
        self._emit_sandbox_note()
        if self._fork is not None:
            self._fork_start(self._fork)
        elif "start" in self.policy.detectors.enabled:
            self._decision_points([Firing("start", "the run is starting")])

    def _resume(self) -> None:
        if self.state.finished:
            raise RunEnded("the trace's run is already finished")
        if not (self.workspace / self.config.kernel_filename).exists():
            raise RunEnded(f"cannot resume: the workspace has no {self.config.kernel_filename}")
        paused = self.state.status == "paused"
        self.emitter.emit("status", {"status": "paused" if paused else "running", "reason": "resumed"})
        uncounted = self.state.usage_due  # a model call whose reply the crash wrote but not its usage event
        if uncounted is not None:
            self._count_usage(uncounted["purpose"], uncounted["model"], uncounted["usage"])
        for block in list(self.state.open_tool_calls):  # a tool call the crash cut off: the model must hear of it
            self.emitter.emit(
                "tool_result",
                {
                    "call_id": block["id"],
                    "name": block.get("name"),
                    "is_error": True,
                    "interrupted": True,
                    "output": "[this tool call was interrupted by a restart of the worker; its effect is unknown]",
                    "truncated_chars": 0,
                    "duration_s": 0,
                },
            )
        self._emit_sandbox_note()  # this life's sandbox may not be the one the run started in
        if self.state.goal_met:
            raise GoalMet("goal confirmed by a full evaluation before the restart")
        self._finish_cut_step()

    def _finish_cut_step(self) -> None:
        """Do what the step the crash cut off had left to do, from the state alone: the goal check a verdict asked
        for, the decision points (looked for again only when none was recorded: detection is a function of the
        state), the question of an open decision point, and the note when the model would have the last word."""
        s = self.state
        if s.fork is not None and not s.fork_decided:
            self._fork_decide()
        self._check_tool_inputs()
        if s.goal_check_due is not None:
            self._goal_check(s.goal_check_due)
        pending = s.pending_question
        point = s.open_decision or (pending or {}).get("decision_point")
        if point is not None:
            if pending is None or not self.questions.review(pending):
                self.questions.ask(Firing(point, "asked after a restart"), first_attempt=s.open_attempts)
        elif not s.turn_fired:
            if s.last_turn is not None:
                self._after_turn()
            elif "start" in self.policy.detectors.enabled and s.fork is None:
                self._decision_points([Firing("start", "the run is starting")])
        if s.model_has_last_word:
            self._tell_model(self.policy.not_done_template.format(goal_status=self.scoreboard.goal_status()))

    # ---------------------------------------------------------------------------------------- forks
    def _fork_start(self, fork: dict[str, Any]) -> None:
        """A fork's first events (agentloop/fork_start.py), and the loop's note when the parent's model had the last
        word at the cut."""
        fork_start.note_warnings(self.emitter.emit, fork)
        self._fork_decide()
        if self.state.model_has_last_word:
            self._tell_model(self.policy.not_done_template.format(goal_status=self.scoreboard.goal_status()))

    def _fork_decide(self) -> None:
        fork = self.state.fork or self._fork
        assert fork is not None  # a fork's run: its trace or its assignment has the fork
        fork_start.decide_at_question(self.emitter.emit, fork, self.state, self.run_id)

    def _emit_sandbox_note(self) -> None:
        note = self.sandbox.note()
        if note is not None:
            self.emitter.emit("note", note)

    def step(self) -> None:
        self._turn_boundary()
        reply = self._call_model("turn", self.state.system_prompt, api_messages(self.state.messages), self.tool_schemas)
        for block in reply.tool_uses:
            self._run_tool(block)
        self._check_tool_inputs()
        self._after_turn()

    def _after_turn(self) -> None:
        """The rest of a step once the turn's tools ran: the goal check when the model ended its turn, decision
        points and their question, and the note when the model would keep the last word. It reads only the state
        (the last turn, the evaluations since), so a resumed run finishes a step cut off here the same way."""
        last_turn = self.state.last_turn
        assert last_turn is not None  # called once a turn was recorded
        turn = ModelReply(content=last_turn.get("content") or [], stop_reason="", model="")
        ended = not turn.tool_uses
        if ended:
            self._goal_check_at_end()
        self._decision_points(
            detect(
                self.state,
                Turn(turn.text, ended, self.state.turn_evaluations),
                self.policy.detectors,
                self.policy.limit_patterns,
            )
        )
        if self.state.model_has_last_word:
            self._tell_model(self.policy.not_done_template.format(goal_status=self.scoreboard.goal_status()))

    # ------------------------------------------------------------------------------- turn boundaries
    def _turn_boundary(self) -> None:
        while True:
            for directive in self.inbox.drain():
                self._apply(directive)
            if self.state.status != "paused":
                return
            self._check_can_go_on()
            self.inbox.wait(1.0)

    def _apply(self, d: Directive) -> None:
        extra = {"directive_id": d.id} if d.id else {}
        if d.action == "human_message":
            self.emitter.emit("human_message", {"text": d.text, "author": d.author, **extra})
        elif d.action == "pause" and self.state.status != "paused":
            self.emitter.emit("status", {"status": "paused", "reason": "paused", **extra})
        elif d.action == "resume" and self.state.status == "paused":
            self.emitter.emit("status", {"status": "running", "reason": "resumed_by_human", **extra})
        elif d.action == "stop":
            raise StoppedByHuman("stopped by a human", directive_id=d.id)

    def _check_tool_inputs(self) -> None:
        limit = int(self.policy.tools["max_invalid_inputs"])
        if self.state.invalid_inputs_in_a_row >= limit:
            raise InvalidToolInputs(
                f"the model sent {self.state.invalid_inputs_in_a_row} tool calls in a row whose "
                f"input was not a JSON object (max_invalid_inputs is {limit}); each was answered "
                f"with an error and none was run"
            )

    def _set_status(self, status: str, reason: str) -> None:
        if self.state.status != status:
            self.emitter.emit("status", {"status": status, "reason": reason})

    def _check_can_go_on(self) -> None:
        """Ends the run (raises) once a budget is spent or its goal cannot be met on this worker."""
        b, s = self.config.budgets, self.state
        if b.steps is not None and s.steps >= b.steps:
            raise BudgetExhausted("steps", s.steps, b.steps)
        if b.tokens is not None and s.tokens_in + s.tokens_out >= b.tokens:
            raise BudgetExhausted("tokens", s.tokens_in + s.tokens_out, b.tokens)
        if b.cost_usd is not None:
            if not s.cost_known and not self._cost_warned:
                self._cost_warned = True
                self.emitter.emit(
                    "note",
                    {
                        "level": "warning",
                        "text": "the cost budget is held to the calls whose price is known, and the run may "
                        "cost more: the price of this model is unknown (see agentloop/prices.toml)",
                    },
                )
            if s.cost_usd >= b.cost_usd:  # the known cost alone is a floor of the whole: the budget is spent
                raise BudgetExhausted("cost", round(s.cost_usd, 4), b.cost_usd)
        if (wall_spent := self._wall_spent()) is not None:
            raise wall_spent
        self.scoreboard.check_budget()
        self.scoreboard.check_reachable()

    def _wall_spent(self) -> BudgetExhausted | None:
        """The end of the run when its wall budget is spent, else None."""
        wall = self.config.budgets.wall_s
        if wall is not None and self.state.wall_s() >= wall:
            return BudgetExhausted("wall", round(self.state.wall_s()), wall)
        return None

    # ------------------------------------------------------------------------------------- the model
    def _call_model(
        self, purpose: str, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelReply:
        self._check_can_go_on()  # before a call of any purpose (a turn, a question selection): none after an end
        wall = self.config.budgets.wall_s
        # the backend waits for an answer, and retries, no longer than the wall budget leaves
        self.model.deadline = None if wall is None else time.monotonic() + wall - self.state.wall_s()
        try:
            # what the trace and the API take, its tool calls under ids the request it goes back in has not used
            reply = received(self.model.query(system, messages, tools, purpose), tool_use_ids(messages))
        except ModelFailed as failed:
            if failed.charged_unread:  # charged, but its usage was never read: the run's cost is a floor from here
                self._count_usage(purpose, self.model.name, UNREAD_USAGE)
            if (wall_spent := self._wall_spent()) is not None:  # it failed because the wall budget ran out
                raise wall_spent from None
            raise
        u = reply.usage
        call = {
            "tokens_in": u.tokens_in,
            "tokens_out": u.tokens_out,
            "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
            "cost_usd": u.cost_usd,
        }
        # The call's usage is written with its reply, in one trace line: a crash before the `usage` event that
        # counts it loses no cost, since the resumed run emits that event from here (_resume).
        self.emitter.emit(
            "model_message",
            {
                "purpose": purpose,
                "model": reply.model,
                "stop_reason": reply.stop_reason,
                "content": reply.content,
                "usage": call,
            },
        )
        self._count_usage(purpose, reply.model, call)
        return reply

    def _count_usage(self, purpose: str, model: str, call: dict[str, Any]) -> None:
        """The `usage` event of one model call: what the run's totals and budgets count."""
        s = self.state
        cost = call["cost_usd"]
        totals_cost = None if (not s.cost_known or cost is None) else round(s.cost_usd + cost, 8)
        totals = {
            "tokens_in": s.tokens_in + call["tokens_in"],
            "tokens_out": s.tokens_out + call["tokens_out"],
            "cost_usd": totals_cost,
            "model_calls": s.model_calls + 1,
        }
        self.emitter.emit(
            "usage",
            {"purpose": purpose, "model": model, **call, "totals": totals},
            usage={"tokens_in": call["tokens_in"], "tokens_out": call["tokens_out"], "cost_usd": cost},
        )

    def _select_question(self, prompt: str) -> str:
        messages = [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
        return self._call_model("select_question", "", messages, []).text

    def _tell_model(self, text: str) -> None:
        self.emitter.emit("note", {"text": text, "level": "info", "to_model": True})

    # ------------------------------------------------------------------------------------- the tools
    def _run_tool(self, block: dict[str, Any]) -> None:
        """Run one tool call and record it."""
        call_id, name, tool_input = block["id"], block.get("name"), block.get("input")
        raw = {"raw_input": block["raw_input"]} if "raw_input" in block else {}
        self.emitter.emit("tool_call", {"call_id": call_id, "name": name, "input": tool_input, **raw})
        started = time.monotonic()
        follow_up = None
        problem = invalid_input(block)
        try:
            if problem is not None:
                result = ToolResult(problem, is_error=True, extra={"invalid_input": True})
            elif name in self.tools:
                result = self.tools[name](cast("dict[str, Any]", tool_input))  # a dict: invalid_input checked it
            elif name == "evaluate":
                result, follow_up = self._evaluate_tool(call_id, cast("dict[str, Any]", tool_input))
            else:
                result = ToolResult(f"unknown tool {name!r}: use shell, editor or evaluate", is_error=True)
        except ToolInputError as exc:
            result = ToolResult(f"error: {exc}", is_error=True)
        except OSError as exc:  # what the file system or the kernel said to the model's input: its to read
            result = ToolResult(f"error: {exc.strerror or exc}", is_error=True)
        payload = {
            "call_id": call_id,
            "name": name,
            "output": result.output,
            "is_error": result.is_error,
            "truncated_chars": result.truncated_chars,
            "duration_s": round(time.monotonic() - started, 3),
        } | {k: v for k, v in result.extra.items() if k != "duration_s"}
        self.emitter.emit("tool_result", payload)
        if follow_up is not None:
            follow_up()

    def _evaluate_tool(self, call_id: str, tool_input: dict[str, Any]) -> tuple[ToolResult, Callable[[], None] | None]:
        scenarios, name = evaluate_tool.parse_input(tool_input, self.config.kernel_filename)
        kernel = self._read_kernel(name)  # KernelFileError: the tool's error answer
        refusal = self.scoreboard.refusal()
        if refusal is not None:  # answered like any call, so that the trace stays a whole conversation
            return ToolResult(refusal, is_error=True, extra={"budget_spent": EVALUATIONS}), None
        try:
            result = self._judge(kernel, scenarios)
        except HarnessDied as exc:  # recorded as an error verdict on this source: it may be what killed it
            payload = self.scoreboard.record(
                died_verdict(self.config.task, kernel, exc), "tool", scenarios, name, call_id
            )
            said = f" Its log ended: {exc.log_tail[-500:]}" if exc.log_tail else " Its log said nothing."
            return ToolResult(
                f"error: {exc.why} while evaluating {name}, so there is no verdict; it is recorded as an error "
                f"on this source. A kernel that kills its process, or the harness, does that.{said}",
                is_error=True,
            ), None
        except EvaluatorError as exc:
            return ToolResult(f"the harness could not evaluate {name}: {exc}", is_error=True), None
        payload = self.scoreboard.record(result, "tool", scenarios, name, call_id)
        output = self.scoreboard.verdict_text(result, payload)
        follow_up: Callable[[], None] | None = None
        if payload["goal_met"]:

            def follow_up() -> None:
                raise GoalMet(f"goal met on a full evaluation of {name}")
        elif self.scoreboard.worth_confirming(result):
            output += (
                "\nThis meets the target on the scenarios it ran; the loop now runs a fresh full evaluation "
                "to confirm the goal."
            )
            follow_up = lambda: self._goal_check(name)  # noqa: E731
        return ToolResult(output, is_error=result.get("status") != "correct"), follow_up

    def _read_kernel(self, name: str) -> KernelFile:
        """The workspace's kernel file `name`, read as the harness is to judge it (agentloop/kernel_file.py): inside
        the workspace, no symbolic link, a regular file within the limit. KernelFileError otherwise."""
        return read_kernel(self.editor.resolve, self.workspace, name)

    def _judge(self, kernel: KernelFile, scenarios: str | list[str]) -> dict[str, Any]:
        """The harness's verdict on the bytes read, judged from a snapshot of them. Where the verdict names the file
        it judged (the harness's does), it names the workspace's file, not the snapshot gone with the call."""
        with snapshot(kernel) as path:
            result = self.evaluator(self.config.task, path, scenarios)
        if result.get("kernel_path"):
            result["kernel_path"] = str(kernel.path)
        return result

    # ------------------------------------------------------------------------------------ the goal
    def _goal_check(self, name: str) -> None:
        """A fresh full evaluation by the loop itself; the run succeeds only if it confirms the goal."""
        try:
            kernel = self._read_kernel(name)
            result = self._judge(kernel, "full")
        except HarnessDied as exc:
            self.scoreboard.record(died_verdict(self.config.task, kernel, exc), "goal_check", "full", name, None)
            self.emitter.emit("note", {"text": f"the goal check could not run: {exc}", "level": "error"})
            return
        except (ToolInputError, EvaluatorError) as exc:  # a KernelFileError is a ToolInputError
            self.emitter.emit("note", {"text": f"the goal check could not run: {exc}", "level": "error"})
            return
        if self.scoreboard.record(result, "goal_check", "full", name, None)["goal_met"]:
            raise GoalMet(f"goal confirmed by a fresh full evaluation of {name}")

    def _goal_check_at_end(self) -> None:
        """The model ended its turn. Check its kernel unless the verdicts on this very source already rule it out."""
        name = self.config.kernel_filename
        try:
            kernel = self._read_kernel(name)
            kernel.data.decode("utf-8")
        except ToolInputError as exc:  # a KernelFileError too: a link, a FIFO, a file over the limit
            self.emitter.emit("note", {"text": f"the goal check could not run: {exc}", "level": "error"})
            return
        except UnicodeDecodeError:
            return
        if self.scoreboard.check_due_at_end(kernel.sha256):
            self._goal_check(name)

    # ----------------------------------------------------------------------------- decision points
    def _decision_points(self, fired: list[Firing]) -> None:
        for firing in fired:
            self.emitter.emit(
                "decision_point", {"name": firing.name, "detail": firing.detail, "evidence": firing.evidence}
            )
        if fired:
            self.questions.ask(fired[0])

    # ---------------------------------------------------------------------------------- the ending
    def _finish(self, status: str, reason: str, message: str) -> None:
        if self.state.finished:
            return
        self.emitter.emit(
            "status",
            {
                "status": status,
                "reason": reason,
                "detail": message,
                "best_speedup": self.state.best_speedup,
                "goal_met": self.state.goal_met,
            },
        )
