"""`python -m agentloop run ...` (one run, standalone) and `python -m agentloop worker ...` (a dashboard's worker)."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloop.errors import ConfigError, ModelFailed
from agentloop.protocol import DEFAULT_MODEL, KERNEL_SOURCE_MAX_BYTES, kernel_source_refusal
from agentloop.worker.targets import TARGETS_ENV
from gpu_harness.terminal import shown_streams

if TYPE_CHECKING:
    from agentloop.config import Budgets as BudgetsType
    from agentloop.config import Goal as GoalType
    from agentloop.config import RunConfig as RunConfigType
    from agentloop.interfaces import EventSink
    from agentloop.state import RunState as RunStateType
    from questionbank.bank import BankEntry


def runs_dir() -> Path:
    return Path(os.environ.get("KSEEK_AGENT_RUNS") or Path.home() / ".local" / "share" / "kernelseek" / "agent-runs")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agentloop", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="one run, standalone (no server)")
    run.add_argument("--task", help="harness task, e.g. matmul_cpu (default with a replay: the recorded task)")
    run.add_argument("--kernel", help="starting kernel file (default: the task's starting kernel)")
    run.add_argument(
        "--model", help=f"Anthropic model id, openai:MODEL, or replay:TRACE (default: $KSEEK_MODEL or {DEFAULT_MODEL})"
    )
    run.add_argument(
        "--trace", help="a new trace file to write (default: under $KSEEK_AGENT_RUNS); one that holds a run is refused"
    )
    run.add_argument("--workspace", help="the agent's working directory (default: next to the trace)")
    run.add_argument(
        "--resume",
        metavar="TRACE",
        help="resume the run recorded in TRACE (its workspace must exist), on the model and with the settings "
        "the trace records",
    )
    run.add_argument("--goal-baseline")
    run.add_argument("--goal-speedup", type=_positive(float))
    run.add_argument("--max-steps", type=_positive(int))
    run.add_argument("--max-tokens", type=_positive(int))
    run.add_argument("--max-cost", type=_positive(float), help="US dollars")
    run.add_argument("--max-wall-s", type=_positive(float))
    run.add_argument("--max-evaluations", type=_positive(int))
    run.add_argument(
        "--review",
        choices=["auto", "terminal", "trace"],
        help="who decides self-asked questions (default: trace for a replay, else auto)",
    )
    run.add_argument("--bank", metavar="FILE", help="question bank file (default: questionbank/bank.toml)")
    run.add_argument(
        "--question-stats",
        metavar="FILE",
        help="effectiveness figures shown when the agent picks a question: the JSON of "
        "`manage.py export_effectiveness`, or {KEY: {asked, mean_gain, large_gain_rate}}",
    )
    run.add_argument(
        "--base-url", help="the model's base URL (default: $ANTHROPIC_BASE_URL, or $OPENAI_BASE_URL for openai:MODEL)"
    )
    run.add_argument("--no-stream", action="store_true", help="do not stream model responses")
    _unsandboxed_flag(run)
    _hide_flag(run, "$KSEEK_AGENT_RUNS, the other runs' traces and workspaces, is always hidden")
    run.add_argument("--quiet", action="store_true")

    worker = sub.add_parser("worker", help="serve a dashboard: take queued runs, stream their events")
    worker.add_argument("--server", required=True, help="ws(s)://HOST[:PORT] or http(s)://… of the dashboard")
    worker.add_argument(
        "--token", default=os.environ.get("KSEEK_WORKER_TOKEN"), help="worker token (default: $KSEEK_WORKER_TOKEN)"
    )
    worker.add_argument(
        "--ca-file",
        default=os.environ.get("KSEEK_WORKER_CA_FILE") or None,
        metavar="PEM",
        help="with wss://: verify the server's certificate against the CA certificates in this PEM file, e.g. "
        "a team's own CA (default: $KSEEK_WORKER_CA_FILE, else the system's trusted CAs). A certificate that "
        "does not verify is refused: the worker exits with status 5",
    )
    worker.add_argument(
        "--insecure-plain-ws",
        action="store_true",
        help="allow plain ws:// to a host other than this one: the token then crosses the network in clear "
        "text. Without it the worker refuses (status 2) and asks for wss://",
    )
    worker.add_argument("--gpus", default="0", help="comma-separated GPU indices, one run per GPU (default: 0)")
    worker.add_argument(
        "--targets",
        default=os.environ.get(TARGETS_ENV) or None,
        help="comma-separated task targets to serve (cpu, cuda-sm90), at most those detected here (default: "
        f"${TARGETS_ENV}, else every one detected: cpu always, cuda-sm90 when each offered GPU has compute "
        "capability 9.0 by nvidia-smi)",
    )
    worker.add_argument(
        "--force-targets",
        action="store_true",
        help="announce --targets even where they were not detected (the log says so); runs of them may fail here",
    )
    worker.add_argument("--state-dir", help="spool, traces and workspaces (default: under $KSEEK_AGENT_RUNS)")
    _unsandboxed_flag(worker)
    _hide_flag(worker, "the worker's state folder is always hidden")
    return parser


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    """A budget's or goal's number, above 0. A 0 was read as not given (`--max-steps 0` ran 50 steps, `--max-cost 0`
    had no limit, `--goal-speedup 0` took the task's goal) and a negative budget ended the run before its first
    call: argparse now refuses either, naming the flag."""

    def parse(text: str) -> float:
        value = kind(text)
        if not value > 0:  # (NaN too)
            raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its message for a value that does not parse
    return parse


def _hide_flag(parser: argparse.ArgumentParser, always: str) -> None:
    parser.add_argument(
        "--hide",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder the agent's commands and kernels must not see under bubblewrap (an empty folder in its "
        f"place), e.g. a dashboard's data folder on the same host (repeatable; {always}). Nothing is hidden "
        "with --unsandboxed, and every other file this user can read stays readable (docs/protocol.md, section 3)",
    )


def _unsandboxed_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--unsandboxed",
        "--no-bwrap",
        action="store_true",
        help="run the agent's commands and kernels without bubblewrap, as this user with no "
        "isolation: they can then read this process's secrets (the API key, the worker "
        "token). Without this flag they run only under a working bubblewrap, and agentloop "
        "refuses to start where there is none (docs/protocol.md, section 3). --no-bwrap is "
        "its older name",
    )


def main(argv: list[str] | None = None) -> int:
    # Much of what this prints is the model's or its commands' (event lines, a model server's errors): a terminal
    # is shown their control characters, never given them (gpu_harness/terminal.py).
    with shown_streams():
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    from agentloop.sandbox import EXIT_NO_SANDBOX, SandboxUnavailable

    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return run_command(args)
        return worker_command(args)
    except SandboxUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NO_SANDBOX
    except (ConfigError, ModelFailed) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _refuse_a_used_trace(path: Path) -> None:
    """A new run is never appended to a trace that holds one: the file would hold two runs' events, and resuming
    or replaying it would read the first run's `started` event with the second's turns."""
    try:
        used = path.stat().st_size > 0
    except OSError:
        return  # no such file (or none readable yet): the trace writer makes it, or says why it cannot
    if used:
        raise ConfigError(
            f"the trace {path} already holds a run: continue that run with --resume {path}, or give --trace a new file"
        )


def _resumable_events(path: str) -> list[dict[str, Any]]:
    """The events of the run a --resume trace holds. A file that holds no run (empty: a run that could not start
    left it; or not a trace of agentloop's) is refused here: an empty list went on to start a new run elsewhere
    (or raised a ValueError), and a foreign line raised a KeyError, both as tracebacks."""
    from agentloop.trace import TraceError, read_trace

    try:
        events = read_trace(path)
    except TraceError as exc:
        raise ConfigError(str(exc)) from None
    first = events[0] if events else {}
    payload = held if isinstance(held := first.get("payload"), dict) else {}
    if not events or "run_id" not in first or payload.get("reason") != "started" or not payload.get("config"):
        raise ConfigError(
            f"the trace {path} holds no run to resume (it is empty, or its first line is not a run's 'started' "
            f"status): start a new run instead (--trace FILE)"
        )
    return events


# The settings a run's trace records: given with --resume they would be ignored, so they are refused instead.
RESUME_FIXED_FLAGS = {
    "task": "--task",
    "kernel": "--kernel",
    "trace": "--trace",
    "goal_baseline": "--goal-baseline",
    "goal_speedup": "--goal-speedup",
    "max_steps": "--max-steps",
    "max_tokens": "--max-tokens",
    "max_cost": "--max-cost",
    "max_wall_s": "--max-wall-s",
    "max_evaluations": "--max-evaluations",
}


def _refuse_settings_with_resume(args: argparse.Namespace) -> None:
    """A resumed run goes on with the task, goal and budgets its trace records (docs/protocol.md 1.3): one of
    them given too would be silently dropped, so the command is refused naming it."""
    given = [flag for name, flag in RESUME_FIXED_FLAGS.items() if getattr(args, name, None) is not None]
    if given:
        raise ConfigError(
            f"--resume goes on with the task, goal and budgets its trace records: drop {', '.join(given)}"
        )


def _model_spec(given: str | None, resume_events: list[dict[str, Any]] | None) -> str:
    """The model a run uses: --model, else, for a resumed run, the model its trace says it ran on (before, the
    default or $KSEEK_MODEL: an `openai:` run or a replay went on with Claude, on the Anthropic key, while its trace
    still named the first model), else $KSEEK_MODEL or the default. A resumed run goes on with its own model only,
    as the worker resumes it: a --model that names another is refused."""
    recorded = resume_events[0]["payload"]["config"].get("model") if resume_events else None
    if given and recorded and given != recorded:
        raise ConfigError(
            f"the run in this trace runs on {recorded}, and a resumed run goes on with the same model: "
            f"leave out --model {given}"
        )
    return given or recorded or os.environ.get("KSEEK_MODEL") or DEFAULT_MODEL


def run_command(args: argparse.Namespace) -> int:
    from agentloop.agent import Agent, Host, Oversight
    from agentloop.config import Budgets, Goal, RunConfig
    from agentloop.console import ConsoleSink
    from agentloop.detectors import best_words
    from agentloop.models import make_model
    from agentloop.review import AutoApprove, TerminalReviewer, TraceReviewer
    from agentloop.sandbox import Sandbox
    from agentloop.trace import TraceError, TraceWriter, read_trace

    # Before anything is written: a run whose commands could not run is not started (fail closed).
    Sandbox.choose(unsandboxed=args.unsandboxed).require()
    if args.resume:
        _refuse_settings_with_resume(args)
    resume_events = _resumable_events(args.resume) if args.resume else None
    model_spec = _model_spec(args.model, resume_events)
    bank, stats = _questions_from_args(args)
    recorded = None
    if model_spec.startswith("replay:"):
        try:
            recorded = read_trace(model_spec[len("replay:") :])
        except TraceError as exc:
            raise ConfigError(str(exc)) from None

    if resume_events:
        config = None
        run_id = resume_events[0]["run_id"]
        trace_path = Path(args.resume)
    else:
        config = _config_from_args(args, model_spec, recorded, Budgets, Goal, RunConfig)
        run_id = "local-" + secrets.token_hex(4)
        trace_path = Path(args.trace) if args.trace else runs_dir() / run_id / "trace.jsonl"
        _refuse_a_used_trace(trace_path)
    workspace = Path(args.workspace) if args.workspace else trace_path.parent / "workspace"

    review = args.review or ("trace" if recorded else "auto")
    if review == "trace" and not recorded:
        raise ConfigError("--review trace needs a replay model (--model replay:TRACE)")
    reviewer = {"auto": AutoApprove, "terminal": TerminalReviewer}.get(review, lambda: TraceReviewer(recorded or []))()
    if config is not None and review == "terminal":
        config = RunConfig(**{**config.__dict__, "review_mode": "review"})

    settings = {"stream": not args.no_stream}
    if args.base_url:
        settings["base_url"] = args.base_url
    # The model first: one that cannot be made (no API key) leaves no empty trace file behind
    model = make_model(model_spec, settings, notify=None)
    trace = TraceWriter(trace_path)
    sinks: list[EventSink] = [trace]
    if not args.quiet:
        sinks.append(ConsoleSink())
    agent = Agent(
        run_id=run_id,
        config=config,
        resume_events=resume_events,
        model=model,
        sinks=sinks,
        # Under bubblewrap the model's shell does not see the other runs' traces and workspaces, nor --hide's folders.
        host=Host(
            workspace,
            Sandbox.choose(unsandboxed=args.unsandboxed, hidden=[runs_dir(), *(Path(p) for p in args.hide)]),
        ),
        oversight=Oversight(reviewer=reviewer, bank=bank, question_stats=stats),
    )
    goal = f"; {_goal_words(config)}" if config is not None else ""
    print(f"run {run_id}: trace {trace_path}, workspace {workspace}{goal}", file=sys.stderr)
    outcome = agent.run()
    trace.close()
    # Named as the run's events and pages name it: "verified" only from a full-set verdict (detectors.best_words);
    # a quick-set best was called "best verified speedup" here while its own decision points said "not verified".
    best = best_words(agent.state)
    print(
        f"run {run_id}: {outcome.status} ({outcome.reason}); {best}; "
        f"{outcome.steps} steps; {_spent(agent.state)}; trace {trace_path}",
        file=sys.stderr,
    )
    return 0 if outcome.status == "succeeded" else 1


def _goal_words(config: RunConfigType) -> str:
    """The goal the run pursues, as its first line says it: "goal 0.5x over naive", and, where that is not its
    task's (a replay keeps its recording's, or --goal-speedup set another), the task's beside it, so that a
    "GOAL MET" at 1.3x is not read as the task's 2x met."""
    from gpu_harness import get_task

    words = f"goal {config.goal.speedup:g}x over {config.goal.baseline}"
    task_goal = get_task(config.task).goal or {}
    own = (config.goal.baseline, config.goal.speedup)
    if task_goal and (task_goal.get("baseline"), task_goal.get("speedup")) != own:
        words += f" (the task's is {task_goal['speedup']:g}x over {task_goal['baseline']})"
    return words


def _spent(state: RunStateType) -> str:
    """What the run's model calls took, as its last line says it: the cost, or, where a call's price is unknown,
    the known part as the floor it is, never as the whole (the terminal showed no cost at all, its usage lines
    skipped)."""
    cost = (
        f"cost ${state.cost_usd:.4f}"
        if state.cost_known
        else f"cost unknown: at least ${state.cost_usd:.4f} (a model's price is not in agentloop/prices.toml)"
    )
    return f"{state.model_calls} model calls ({state.tokens_in} tokens in, {state.tokens_out} out), {cost}"


def _questions_from_args(
    args: argparse.Namespace,
) -> tuple[list[BankEntry] | None, dict[str, dict[str, Any]] | None]:
    """The bank (None: the default file) and the effectiveness figures (None: none) a standalone run uses."""
    from agentloop.bank_source import load_stats_file
    from questionbank.bank import BankError, load_bank

    bank = None
    if args.bank:
        try:
            bank = load_bank(args.bank)
        except BankError as exc:
            raise ConfigError(str(exc)) from None
    stats = load_stats_file(args.question_stats) if args.question_stats else None
    return bank, stats


def _starting_kernel(path: Path) -> str:
    """The text of --kernel, refused (ConfigError) over the protocol's limit on a kernel source: the agent would
    never evaluate it (docs/protocol.md 1.2, the same limit end to end), so a run of it only spent model calls.
    At most the limit + 1 bytes are read, so a device such as /dev/zero is refused too, not read forever."""
    try:
        with path.open("rb") as file:
            data = file.read(KERNEL_SOURCE_MAX_BYTES + 1)
            size = max(len(data), os.fstat(file.fileno()).st_size)
        if refusal := kernel_source_refusal(size):
            raise ConfigError(f"--kernel {path}: {refusal}")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read --kernel {path}: {exc}") from None


def _config_from_args(
    args: argparse.Namespace,
    model_spec: str,
    recorded: list[dict[str, Any]] | None,
    Budgets: type[BudgetsType],
    Goal: type[GoalType],
    RunConfig: type[RunConfigType],
) -> RunConfigType:
    base = None
    if recorded:
        started = next((e for e in recorded if e["kind"] == "status" and e["payload"].get("config")), None)
        base = started["payload"]["config"] if started else None
    task = args.task or (base or {}).get("task")
    if not task:
        raise ConfigError("--task is required (e.g. --task matmul_cpu)")
    from gpu_harness import get_task

    try:
        harness_task = get_task(task)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.kernel:
        kernel_path = Path(args.kernel)
        source = _starting_kernel(kernel_path)
        filename = kernel_path.name
    elif base and base.get("task") == task:
        source, filename = base["starting_kernel"], base["kernel_filename"]
    else:
        if harness_task.starting_kernel is None:  # (Path(None) raised a TypeError here)
            raise ConfigError(f"task {task} names no starting kernel: give --kernel")
        source = harness_task.starting_kernel.read_text(encoding="utf-8")
        filename = harness_task.starting_kernel.name
    # A task's one goal is its task.toml [goal] (a fork keeps its parent's)
    default_goal = (base or {}).get("goal") if base and base.get("task") == task else harness_task.goal
    baseline = args.goal_baseline or (default_goal or {}).get("baseline")
    speedup = args.goal_speedup or (default_goal or {}).get("speedup")
    if not baseline or not speedup:
        raise ConfigError(f"no default goal for task {task}: give --goal-baseline and --goal-speedup")
    budgets = Budgets(
        steps=args.max_steps or (None if base else 50),
        tokens=args.max_tokens,
        cost_usd=args.max_cost,
        wall_s=args.max_wall_s,
        evaluations=args.max_evaluations,
    )
    if base and not any((args.max_steps, args.max_tokens, args.max_cost, args.max_wall_s, args.max_evaluations)):
        budgets = Budgets.from_dict(base.get("budgets"))
    # A replay keeps the recorded review mode, so that the recorded decisions fall where they fell.
    review_mode = (base or {}).get("review_mode", "auto") if base else "auto"
    return RunConfig(
        task=task,
        goal=Goal(baseline, float(speedup)),
        model=model_spec,
        starting_kernel=source,
        kernel_filename=filename,
        budgets=budgets,
        review_mode=review_mode,
        review_timeout_s=(base or {}).get("review_timeout_s"),
    )


def worker_command(args: argparse.Namespace) -> int:
    from agentloop.worker.client import run_worker

    if not args.token:
        raise ConfigError("a worker token is required: --token or $KSEEK_WORKER_TOKEN")
    gpus = [int(g) for g in args.gpus.split(",") if g.strip()]
    state_dir = Path(args.state_dir) if args.state_dir else runs_dir() / "worker"
    return run_worker(
        server=args.server,
        token=args.token,
        gpus=gpus,
        state_dir=state_dir,
        use_bwrap=False if args.unsandboxed else None,
        hidden=[Path(p) for p in args.hide],
        ca_file=args.ca_file,
        allow_plain_ws=args.insecure_plain_ws,
        targets=args.targets,
        force_targets=args.force_targets,
    )
