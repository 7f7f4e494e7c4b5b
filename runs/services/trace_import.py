"""A browsable run made from a trace file: this dashboard's export, an agent-loop trace, a harness `--trace`."""

import json
import math
import re
from pathlib import PurePosixPath
from typing import Any, cast

from django.db import DataError, transaction
from django.utils import timezone

from agentloop.json_safe import nests_deeper
from agentloop.protocol import EVENT_MAX_BYTES, MESSAGE_MAX_BYTES, event_message_bytes
from runs.event_parser import (
    EVENT_MAX_DEPTH,
    ParsedEvent,
    Refusal,
    envelope_problem,
    lone_surrogate_problem,
    parse_event,
    usage_problem,
)
from runs.events import publish_after_commit
from runs.models import FINISHED_STATUSES, ReviewMode, Run, RunStatus, Step, StepKind, Task
from runs.nul_escape import NUL
from runs.services.errors import ServiceError
from runs.services.kernels import run_goal_evaluation, sha256_text
from runs.services.step_effects import IMPORT_EFFECTS, status_reason_text
from runs.services.steps import STEP_FIELDS, event_fields, events_store, same_event

_IMPORT_BATCH = 1000
# A line nests no deeper than a worker's event may (runs.event_parser.EVENT_MAX_DEPTH), so that every event the
# server stored can be exported and imported again. json.loads itself raises RecursionError near 1,000.
NESTING_MAX = EVENT_MAX_DEPTH
# A line is read whole before it is parsed, and parsing takes many times a line's size in memory (a 32 MiB line of
# `{},` took 2.3 GB and 90 seconds): a line longer than the largest message a worker may send, which holds no event
# the server stores (docs/protocol.md 2.1), is refused unread.
LINE_MAX_BYTES = MESSAGE_MAX_BYTES
# A refusal's message is shown on the import form: however long what the trace holds, the message stays short.
MESSAGE_MAX = 400
# The byte order mark some editors write at a UTF-8 file's start (Windows' Notepad): not JSON, so it is dropped.
BOM = "\ufeff"
# docs/protocol.md 1.1: every event has exactly these top-level fields.
# This dashboard's export holds these lines besides its run's events (runs/run_pages/selectors.py).
EXPORT_TYPES = ("run", "question", "evaluation")
# The first bytes of a compressed file, its format, and how to decompress it (the lab ships traces as .jsonl.xz).
COMPRESSED = (
    (b"\xfd7zXZ\x00", "xz", "xz -dk FILE"),
    (b"\x1f\x8b", "gzip", "gunzip -k FILE"),
    (b"\x28\xb5\x2f\xfd", "zstd", "zstd -d FILE"),
    (b"PK\x03\x04", "zip", "unzip FILE"),
    (b"PK\x05\x06", "zip", "unzip FILE"),
    (b"BZh", "bzip2", "bunzip2 -k FILE"),
)


def _clipped(message: str) -> str:
    """A refusal's message within MESSAGE_MAX characters (a trace's own text quoted in it may be long)."""
    return message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 1] + "…"


def _compressed(first_line) -> str | None:
    """Why a file whose first line starts with a compression format's magic bytes is refused, or None."""
    if not isinstance(first_line, bytes):
        return None
    for magic, name, command in COMPRESSED:
        if first_line.startswith(magic):
            return (
                f"the file is {name}-compressed, not JSONL text: decompress it first ({command}) and import the "
                "file that gives"
            )
    return None


def _rewind(lines):
    """The trace as something that can be read twice: an uploaded or opened file is read again from its start
    (never held whole); a list is itself; any other iterable is made into a list."""
    if hasattr(lines, "seek"):

        def again():
            lines.seek(0)
            return lines

        return again
    kept = lines if isinstance(lines, (list, tuple)) else list(lines)
    return lambda: kept


def _line_bytes(line) -> int:
    """A line's size in bytes, as read from a file, or of a line given as text in UTF-8."""
    return len(line) if isinstance(line, bytes) else len(line.encode("utf-8", "surrogatepass"))


def _trace_records(lines):
    """Parse JSONL line by line, yielding (line number, record); a last line cut short (a crash mid-write) is
    dropped, a broken line elsewhere is an error."""
    broken = None  # (number, reason) of an unreadable line, fatal only if another line follows it
    number = 0
    read_any = False  # whether a line was an event: a file of one unreadable line is no trace cut short
    for line in lines:
        number += 1
        if number == 1 and (compressed := _compressed(line)):
            raise ServiceError(compressed)
        if (size := _line_bytes(line)) > LINE_MAX_BYTES:
            raise ServiceError(
                f"line {number} is {size:,} bytes, over the {LINE_MAX_BYTES:,} a line may hold (the largest message "
                "a worker may send, docs/protocol.md 2.1): it is not read"
            )
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
        except UnicodeDecodeError:
            raise ServiceError(f"line {number} is not UTF-8 text") from None
        if number == 1:
            text = text.removeprefix(BOM)  # an editor's byte order mark is no part of the first event
        if not text.strip():
            continue
        if broken is not None:
            raise ServiceError(broken[1])
        try:
            record = json.loads(text)
        except ValueError:
            broken = (number, f"line {number} is not JSON")
            continue
        except RecursionError:
            broken = (number, f"line {number} nests deeper than {NESTING_MAX} levels")
            continue
        _check_record(number, text, record)
        read_any = True
        yield number, record
    if broken is not None and not read_any:
        # Not a crash mid-write: nothing before the line was readable, so the file is no trace (a text file, a
        # log): name the line rather than say "the trace holds no events".
        raise ServiceError(f"{broken[1]}: a trace is JSON, one event a line (docs/protocol.md 1.3)")


def _check_record(number: int, text: str, record) -> None:
    """ServiceError, naming the line, for a parsed line that no reading of it may take: not an object, nested too
    deep, or holding a lone surrogate in any field (the run line's and the started config's fields go into the
    run's own row before any event is parsed, and a surrogate there raised a server error)."""
    if not isinstance(record, dict):
        raise ServiceError(f"line {number} is not a JSON object")
    if nests_deeper(record, NESTING_MAX):
        raise ServiceError(f"line {number} nests deeper than {NESTING_MAX} levels")
    if _MAYBE_LONE_SURROGATE.search(text) and (problem := _lone_surrogate(record)):
        raise ServiceError(f"line {number}: {problem}")


# JSON reads a lone surrogate only from an escape \ud800 to \udfff (a line given as text may hold one as itself):
# only then is the whole line walked.
_MAYBE_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")


def _lone_surrogate(record: dict) -> str | None:
    """Where the line holds a lone surrogate, named from its top-level field ("payload.kernel_source holds ..."),
    or None."""
    for key, value in record.items():
        problem = lone_surrogate_problem(key, "a field's name") or lone_surrogate_problem(value, str(key)[:40])
        if problem:
            return problem
    return None


def _is_harness_line(record: dict) -> bool:
    # `python -m gpu_harness eval --trace`: one EvalResult per line, with kind=evaluation and no seq.
    return record.get("kind") == "evaluation" and "seq" not in record and "scenarios" in record


def _is_export_line(record: dict) -> bool:
    # The export's run line, and its question and evaluation lines after the events: read for the run, not stored.
    return record.get("type") in EXPORT_TYPES


def _line_format(record: dict) -> str:
    """ "harness" for a harness `--trace` line, "events" for a run event or an export's own line."""
    return "harness" if _is_harness_line(record) else "events"


FORMAT_WORDS = {"harness": "a harness --trace line", "events": "a run event (or an export's line)"}


def _differences(stored: tuple, new: tuple) -> list[str]:
    """Which parts of two events under one seq differ (kind, payload, ts, usage), each by the store's own
    comparison (steps.same_event, over steps.event_fields' tuples)."""
    parts = {"kind": (0,), "payload": (1,), "ts": (2,), "usage": (3, 4, 5)}
    return [
        name
        for name, places in parts.items()
        if not same_event(stored, tuple(new[i] if i in places else stored[i] for i in range(len(stored))))
    ]


class _Numbering:
    """docs/protocol.md 1.1's numbering of a trace's events, held line by line: one run_id throughout, and each
    new seq the next one, 0, 1, 2, … in line order with no gaps. A seq already used is a re-sent event, which the
    store takes only as the same event (steps.same_event; `_store` says what differs). An export of this
    dashboard's may skip a seq (the server keeps no event it refused for good: 2.4) but holds the rest, its
    events' run_id being its run line's id."""

    def __init__(self, meta: dict | None):
        self.export = meta is not None
        self.run_id = (meta or {}).get("id")
        self.highest = -1
        self.skipped: list[range] = []  # an export's gaps, which no later line may fill

    def is_new(self, number: int, run_id, seq: int) -> bool:
        """Whether the line's event has a new seq (False: a seq used before); else ServiceError."""
        self._check_run(number, run_id)
        if seq <= self.highest and not any(seq in gap for gap in self.skipped):
            return False
        if seq != self.highest + 1 and not (self.export and seq > self.highest):
            after = f"follows seq {self.highest}" if self.highest >= 0 else "is the trace's first event"
            raise ServiceError(
                f"line {number}: seq {seq} {after}, where seq {self.highest + 1} was due: a trace's events are "
                "numbered 0, 1, 2, … in line order, with no gaps (docs/protocol.md 1.1)"
            )
        if seq > self.highest + 1:
            self.skipped.append(range(self.highest + 1, seq))
        self.highest = seq
        return True

    def _check_run(self, number: int, run_id) -> None:
        if self.run_id is None:
            self.run_id = run_id
        elif run_id != self.run_id or type(run_id) is not type(self.run_id):
            raise ServiceError(
                f"line {number}: run_id {json.dumps(run_id)[:60]} is not the trace's run "
                f"({json.dumps(self.run_id)[:60]}): a trace holds the events of one run"
            )


def _harness_line_as_event(record: dict, seq: int) -> dict:
    result = {k: v for k, v in record.items() if k not in ("kind", "note", "summary")}
    payload = {
        "purpose": "tool",
        "kernel_source": record.get("kernel_source") or "",
        "kernel_path": record.get("kernel_path") or "",
        "result": result,
    }
    if record.get("note"):
        payload["note"] = record["note"]
    return {"seq": seq, "kind": StepKind.EVALUATION, "ts": record.get("finished_at") or None, "payload": payload}


def _events(records, harness: bool):
    """The run events of a trace's records: a harness trace's lines numbered as events, or the envelopes (each
    held to docs/protocol.md 1.1's; an export's own lines are left out)."""
    seq = 0
    for number, record in records:
        if harness:
            yield number, _harness_line_as_event(record, seq)
            seq += 1
        elif not _is_export_line(record):
            problem = envelope_problem(record)
            if problem:
                raise ServiceError(f"line {number}: {problem}")
            yield number, record


def _scan(records) -> dict:
    """A first reading of the whole trace for what the run is made from, keeping none of its events. A trace is of
    one format: a line of the other format than its first line's is refused, naming it."""
    found: dict[str, Any] = {
        "meta": None,
        "config": None,
        "evaluation_task": None,
        "harness": False,
        "events": False,
        "first": None,
    }
    found["lines"] = {}  # "meta" / "config" / "first" -> the line it was read from (a refusal names it)
    trace_format = None  # (format, line) of the trace's first line
    for number, record in records:
        line_format = _line_format(record)
        if trace_format is None:
            trace_format = (line_format, number)
        elif line_format != trace_format[0]:
            raise ServiceError(
                f"line {number} is {FORMAT_WORDS[line_format]}, but line {trace_format[1]} is "
                f"{FORMAT_WORDS[trace_format[0]]}: a trace holds one format or the other, so import them apart"
            )
        _within_event_limit(number, record)
        _scan_record(found, number, record)
    if trace_format is None:
        raise ServiceError("the trace holds no events")
    return found


def _within_event_limit(number: int, record: dict) -> None:
    """A line holds no more than an event a worker may send (EVENT_MAX_BYTES, measured as a worker's event is:
    docs/protocol.md 2.1), a harness verdict and an export's own line included: each travels inside one. Measured
    on the first reading, so that the second never parses such a line again."""
    if (size := event_message_bytes(record)) > EVENT_MAX_BYTES:
        raise ServiceError(
            f"line {number} holds {size:,} bytes, over the limit of {EVENT_MAX_BYTES:,} bytes on an event "
            "(measured as a worker's event is: docs/protocol.md 2.1)"
        )


def _scan_record(found: dict, number: int, record: dict) -> None:
    if record.get("type") == "run" and found["meta"] is None:
        found["meta"], found["lines"]["meta"] = record, number
    if found["first"] is None and (_is_harness_line(record) or not _is_export_line(record)):
        found["first"], found["lines"]["first"] = record, number
    if _is_harness_line(record):
        found["harness"] = True
        found["evaluation_task"] = found["evaluation_task"] or record.get("task")
    elif not _is_export_line(record):
        found["events"] = True
        payload = record["payload"] if isinstance(record.get("payload"), dict) else {}
        if record.get("kind") == StepKind.STATUS and payload.get("config") and found["config"] is None:
            found["config"] = payload["config"] if isinstance(payload["config"], dict) else {}
            found["lines"]["config"] = number
        result = payload.get("result")
        if record.get("kind") == StepKind.EVALUATION and isinstance(result, dict):
            found["evaluation_task"] = found["evaluation_task"] or result.get("task")


def trace_origin(found: dict) -> str:
    """Which original run a trace records, the same for every import of it (and of an export of an import): an
    export's own `origin` (the run it was imported from, passed on), else the exported run; an agent-loop trace's
    run id with its first event's time; a harness trace's first verdict. Figures that count runs count each origin
    once (runs/selectors_bank.py)."""
    meta, first = found["meta"] or {}, found["first"] or {}
    if meta.get("origin"):
        return str(meta["origin"])[:200]
    if meta.get("id") is not None:
        return f"run:{meta['id']}:{meta.get('created_at') or ''}"[:200]
    if found["harness"]:
        return f"harness:{first.get('kernel_sha256') or ''}:{first.get('started_at') or ''}"[:200]
    return f"trace:{first.get('run_id') or ''}:{first.get('ts') or ''}"[:200]


def _first_given(*choices: tuple) -> tuple:
    """The first (value, where) whose value is given, as `meta.get(...) or config.get(...)` picks it."""
    return next((choice for choice in choices if choice[0]), (None, "first"))


def _row_nul_problem(found: dict, name: str) -> str | None:
    """Where a text that the run's own row is made from (its task, goal, model, starting kernel, origin, what it
    was imported from) holds a NUL character, named with its field and line; else None. PostgreSQL cannot hold
    one in a text value and SQLite would store it raw, so both refuse it the same way. An event's payload is
    another matter: its NUL characters are escaped (runs/nul_escape.py)."""
    meta, config = found["meta"] or {}, found["config"] or {}
    goal_meta, goal_config = meta.get("goal"), config.get("goal")
    texts = {  # field -> (its text, the line it is read from: "meta", "config" or "first")
        "task": _first_given(
            (meta.get("task"), "meta"), (config.get("task"), "config"), (found["evaluation_task"], "first")
        ),
        "goal": _first_given((goal_meta, "meta"), (goal_config, "config")),
        "model": _first_given((meta.get("model"), "meta"), (config.get("model"), "config")),
        "starting_kernel": (config.get("starting_kernel"), "config"),
        "origin": (trace_origin(found), "meta" if meta.get("origin") or meta.get("id") is not None else "first"),
        "imported_from": (meta.get("imported_from"), "meta"),
    }
    for field, (value, where) in texts.items():
        text = value.get("baseline") if field == "goal" and isinstance(value, dict) else value
        if isinstance(text, str) and NUL in text:
            return f"line {found['lines'].get(where)}: {field} holds a NUL character, which no run's {field} may hold"
    if NUL in name:
        return "the trace's file name holds a NUL character"
    return None


def _goal_problem(goal) -> str | None:
    """What is wrong with a trace's goal ({"baseline": name, "speedup": x}), or None when it is one a run holds."""
    if not isinstance(goal, dict):
        return f"the goal must be an object with a baseline and a speedup, not {json.dumps(goal)[:60]}"
    baseline, speedup = goal.get("baseline"), goal.get("speedup")
    if (
        not isinstance(baseline, str)
        or not baseline.strip()
        or len(baseline) > cast(int, Run._meta.get_field("goal_baseline").max_length)
    ):
        return f"the goal's baseline must be a baseline's name, not {json.dumps(baseline)[:60]}"
    if isinstance(speedup, bool) or not isinstance(speedup, (int, float)) or not math.isfinite(speedup) or speedup <= 0:
        return f"the goal's speedup must be a positive finite number, not {json.dumps(speedup)[:60]}"
    return None


def trace_goal(found: dict) -> tuple[str, float | None]:
    """The goal the recorded run was judged against, which the import keeps (issue 34): the export's run line
    first (the run's own goal on the site that ran it), else the agent's started config; ("", None) when the
    trace names none (the run then has its task's). A malformed one refuses the import, naming its line."""
    meta, config = found["meta"] or {}, found["config"] or {}
    for where, record in (("meta", meta), ("config", config)):
        if "goal" not in record or record["goal"] is None:
            continue
        problem = _goal_problem(record["goal"])
        if problem:
            raise ServiceError(f"line {found['lines'][where]}: {problem}")
    goal = meta.get("goal") or config.get("goal")
    return (goal["baseline"].strip(), float(goal["speedup"])) if goal else ("", None)


def imported_text(name: str, meta: dict) -> str:
    """What an imported run's `imported_from` says: the trace's name, and the run it exports where it is one."""
    text = f"trace {name}" if name else "a trace"
    if meta.get("id") is not None:
        text += f" (an export of run {meta['id']}"
        text += f", itself imported from {meta['imported_from']})" if meta.get("imported_from") else ")"
    return text[: Run._meta.get_field("imported_from").max_length]


def imported_model(name: str) -> str:
    """The model label of a trace that names none (a harness trace): the trace file's name without its folders,
    which `imported_from` keeps (a released kernel's trace is named by a path such as ../../lab/...)."""
    file_name = PurePosixPath(name.replace("\\", "/")).name  # a Windows path's folders go too
    return f"import:{file_name or name}"


def _parsed(run: Run, number: int, event: dict, *, harness: bool) -> ParsedEvent:
    # An event's time is required as from a worker (docs/protocol.md 1.1); a harness line's may be missing.
    parsed = parse_event(event, run_id=run.pk, time_required=not harness)
    if isinstance(parsed, Refusal):
        raise ServiceError(f"line {number}: {parsed.reason}")
    # Its usage as a worker's: the three fields, a usage event's repeating its payload's (a harness line has no
    # envelope: the import gives its evaluation none).
    if not harness and (problem := usage_problem(event["usage"], parsed.kind, event["payload"])) is not None:
        raise ServiceError(f"line {number}: {problem}")
    if parsed.kind == StepKind.EVALUATION and (problem := _verdict_problem(parsed.payload, run.task.name)):
        raise ServiceError(f"line {number}: {problem}")
    return parsed


def _verdict_problem(payload: dict, task_name: str) -> str | None:
    """What makes an evaluation's verdict no harness verdict of this trace's run, or None: a verdict of another
    task (its claim would be shown among this task's kernels), or one whose kernel_sha256 is not the hash of the
    source it comes with (the harness writes both from the one source it judged; a claim for one source pinned to
    another's). The store refuses a verdict of another shape (runs.services.kernels.stored_verdict)."""
    result = payload.get("result")
    if not isinstance(result, dict):
        return None
    named_task = result.get("task")
    if isinstance(named_task, str) and named_task and named_task != task_name:
        return (
            f"the verdict is for task {named_task[:60]!r}, not the trace's task {task_name!r}: a trace records the "
            "run of one task"
        )
    return _source_hash_problem(payload, result)


def _source_hash_problem(payload: dict, result: dict) -> str | None:
    # An `error` verdict is left alone: the agent's own, when the harness died, hashes the file's bytes and carries
    # their text decoded with replacements (agentloop.agent.died_verdict), and it claims no figure.
    source = payload.get("kernel_source") or result.get("kernel_source")
    if result.get("status") == "error" or not isinstance(source, str) or not source:
        return None
    digest = sha256_text(source)
    for field, named in (
        ("kernel_sha256", payload.get("kernel_sha256")),
        ("result.kernel_sha256", result.get("kernel_sha256")),
    ):
        if isinstance(named, str) and named and named.lower() != digest:
            return (
                f"{field} {named[:16]!r} is not the sha256 of the kernel source the evaluation carries "
                f"({digest[:16]}…): a verdict names the source it judged"
            )
    return None


def _store(batch: list[tuple[int, ParsedEvent]]) -> None:
    """Store a batch of the trace's events through the one store, with their effects but the status's (the
    import sets the run's status itself); anything refused refuses the whole import. A seq used before is taken
    by the store only as the same event (a re-send); another event under it is refused, saying what differs."""
    for (number, event), outcome in zip(batch, events_store([e for _, e in batch], effects=IMPORT_EFFECTS)):
        if outcome.conflict:
            stored = Step.objects.filter(run_id=event.run_id, seq=event.seq).values_list(*STEP_FIELDS).get()
            differ = " and ".join(_differences(stored, event_fields(event)))
            raise ServiceError(
                f"line {number}: seq {event.seq} again, with another {differ} than the event an earlier line gave "
                "it: an event sent again must be the same event (docs/protocol.md 1.1)"
            )
        if not outcome.stored:
            raise ServiceError(f"line {number} (seq {event.seq}): {outcome.error}")


def trace_import(*, lines, name: str, user=None) -> Run:
    """Make a browsable run from a trace: this dashboard's export, an agent-loop trace, or a harness `--trace` file.

    `lines` is an open file (read twice from its start, line by line: a first pass finds the task and the
    format, one a file, the second stores the steps) or a list of lines. Each event line is held to the
    protocol's envelope, usage and numbering (docs/protocol.md 1.1, 1.3: `runs.event_parser.envelope_problem`,
    `usage_problem`, `_Numbering`; a seq used
    before goes to the store, which takes it only as the same event). Steps are stored in batches, so memory holds
    one batch, not the trace; questions, kernels and evaluations are derived from their events as if a worker had
    sent them. The run ends in the trace's last finished status, or `stopped` when the trace stops before one (an
    imported run never runs on); a `succeeded` that no evaluation in the trace confirms is shown `failed`, with
    that as its reason. Anything refused stores nothing, and its message is at most MESSAGE_MAX characters.
    """
    try:
        return _import(lines, name=name, user=user)
    except ServiceError as refused:
        raise ServiceError(_clipped(str(refused))) from None


def _import(lines, *, name: str, user) -> Run:
    again = _rewind(lines)
    found = _scan(_trace_records(again()))
    meta, config = found["meta"] or {}, found["config"] or {}
    if not (found["harness"] or found["events"]):
        raise ServiceError("the trace holds no run events")
    if problem := _row_nul_problem(found, name):
        raise ServiceError(problem)
    task_name = meta.get("task") or config.get("task") or found["evaluation_task"]
    goal = trace_goal(found)
    try:
        with transaction.atomic():
            task = Task.objects.filter(name=task_name).first() if isinstance(task_name, str) and task_name else None
            if task is None:
                raise ServiceError(
                    f"the trace's task {task_name!r:.60} is not known here" if task_name else "the trace names no task"
                )
            run = _import_steps(again, found, task=task, goal=goal, name=name, user=user)
    except DataError as rejected:  # e.g. PostgreSQL cannot hold a NUL character in a text or JSON value
        raise ServiceError(
            f"the database cannot store this trace: {str(rejected).strip().splitlines()[0][:200]}"
        ) from None
    return run


def _import_steps(again, found: dict, *, task: Task, goal: tuple, name: str, user) -> Run:
    harness = found["harness"]
    meta, config = found["meta"] or {}, found["config"] or {}
    run = Run.objects.create(
        imported_from=imported_text(name, meta),
        origin=trace_origin(found),
        task=task,
        goal_baseline=goal[0],
        goal_speedup=goal[1],
        model=str(meta.get("model") or config.get("model") or imported_model(name))[:120],
        starting_kernel=config.get("starting_kernel") or task.starting_kernel,
        started_by=user,
        review_mode=cast(str, meta.get("review_mode"))
        if meta.get("review_mode") in ReviewMode.values
        else ReviewMode.AUTO,
    )
    numbering = _Numbering(found["meta"])
    batch, first, last, final = [], None, None, None
    for number, event in _events(_trace_records(again()), harness):
        step = _parsed(run, number, event, harness=harness)
        if harness or numbering.is_new(number, event["run_id"], step.seq):  # else a re-send, for the store
            first = first or step
            last = step  # new seqs come in order
            if step.kind == StepKind.STATUS and step.payload.get("status") in FINISHED_STATUSES:
                final = step
        batch.append((number, step))
        if len(batch) >= _IMPORT_BATCH:
            _store(batch)
            batch = []
    _store(batch)
    if last is None:
        raise ServiceError("the trace holds no run events")
    # The store kept the totals; the run's status and times are the trace's.
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(
        status=final.payload["status"] if final else RunStatus.STOPPED,
        started_at=first.created_at or now,
        finished_at=last.created_at or now,
    )
    run.refresh_from_db()  # the effects moved its best speedups
    # The trace's own word is not enough for `succeeded`, as it is not for a worker (docs/protocol.md 1.2): an
    # evaluation in the trace must confirm the goal, or the imported run says why it is shown failed.
    # Whatever the trace says stays its claim: no harness here measured it, so the reason says so (a "goal
    # confirmed" of an imported run is the trace's word, not this site's verdict).
    reason = (
        f"the trace's claim, not measured here: {status_reason_text(final.payload)}"
        if final
        else "imported: the trace has no final status"
    )
    if run.status == RunStatus.SUCCEEDED and run_goal_evaluation(run) is None:
        run.status = RunStatus.FAILED
        reason = "imported: the trace says succeeded, but no evaluation in it confirms the goal"
    run.status_reason = status_reason_text({"reason": reason})
    run.save(update_fields=["status", "status_reason", "updated_at"])
    publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)
    return run
