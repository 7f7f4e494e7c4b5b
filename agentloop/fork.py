"""A fork's starting point, cut from its parent's events: pure functions, no Django, no files (docs/fork.md).

`fork_cut(events, step_seq)` says what a run forked at step `step_seq` of a parent starts from: the conversation
as the parent's model had it at that step (closed so that the Messages API takes it: every `tool_use` answered),
the workspace files the trace can rebuild (the starting kernel and every editor write that had returned by then,
checked against the kernel hashes the parent's evaluations recorded), what it cannot rebuild (files shell
commands may have written), and, when the step is a question, that question. The server builds a fork's
assignment from it (runs/services/forks.py); the worker and the agent receive the result as data
(docs/protocol.md 2.10) and never read the parent's trace.
"""

from __future__ import annotations

import copy
import hashlib
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from agentloop.json_safe import nests_deeper
from agentloop.protocol import EVENT_MAX_DEPTH, VERIFY_MODEL
from agentloop.state import RunState, api_messages

# The decisions a fork at a question may take instead of the parent's (docs/fork.md).
DECISIONS = ("veto", "bank", "write")

# Shell commands that look as though they write files (a redirection, a copy, an in-place edit, a compiler's
# output): their files are not in the trace, so the fork's workspace lacks them. A heuristic, stated as such.
_WRITES = re.compile(
    r"(?<![0-9&])>(?!&)|\btee\b|\bsed\s+-i|\bcp\b|\bmv\b|\btouch\b|\bmkdir\b|\brm\b|\bpatch\b|\bdd\b|"
    r"\bunzip\b|\btar\b|\bgit\s+(apply|checkout|clone)\b|\s-o\s|\bwget\b|\bcurl\b.*\s-[oO]\b"
)

NOT_RUN = (
    "[not run in this fork: run {parent} was forked at step #{seq}, before this call returned; whatever it did in "
    "the parent is not in this workspace]"
)


class ForkError(ValueError):
    """The cut cannot be made (no such step, a trace without its start): the message says why."""


@dataclass
class ForkCut:
    step_seq: int
    conversation: list[dict[str, Any]]  # RunState.messages at the cut: {"role", "content": [blocks]}, roles unmerged
    files: dict[str, str]  # workspace path -> text, as the parent's workspace held it at the cut
    warnings: list[str] = field(default_factory=list)  # what the fork's workspace may lack, in words
    question: dict[str, Any] | None = None  # the question_proposed payload when the step is a question
    played: dict[str, int] = field(default_factory=dict)  # the parent's model calls before the cut, by purpose
    config: dict[str, Any] = field(default_factory=dict)  # the parent's `started` config

    @property
    def model_has_last_word(self) -> bool:
        return bool(self.conversation) and self.conversation[-1]["role"] == "assistant"


def question_at(events: list[dict[str, Any]], step_seq: int) -> tuple[int, dict[str, Any]] | None:
    """(seq of its proposal, the proposal's payload) when step `step_seq` is a question: a `question_proposed`
    step, or a `question_decided` step (which forks at the proposal it decided)."""
    by_seq = {e["seq"]: e for e in events}
    step = by_seq.get(step_seq)
    if step is None:
        return None
    if step["kind"] == "question_proposed":
        return step_seq, step["payload"]
    if step["kind"] == "question_decided":
        ref = step["payload"].get("question_ref")
        for e in reversed(events):
            if e["seq"] < step_seq and e["kind"] == "question_proposed" and e["payload"].get("question_ref") == ref:
                return e["seq"], e["payload"]
    return None


def start_problem(first: Mapping[str, Any] | None) -> str:
    """Why a run whose record begins with event `first` cannot be forked at any step ("" when it can): the run
    page words it after "No Fork here:", and `fork_cut` refuses with it."""
    payload = first.get("payload") if isinstance(first, dict) else None
    config = payload.get("config") if isinstance(payload, dict) else None
    if first is None or first.get("kind") != "status" or not isinstance(config, dict) or not config:
        return (
            "this run's record does not begin with its started status (an imported harness trace holds its "
            "evaluations only), so a fork has nothing to continue from"
        )
    # A "Verify here" run (docs/protocol.md 2.12) has no agent: a fork of it would be a new agent run with no
    # conversation and the verify run's budget of one evaluation, spent at once (it failed on it).
    if config.get("model") == VERIFY_MODEL:
        return (
            "this is a Verify here run, one full evaluation of a stored kernel with no agent, so a fork has no "
            "conversation to continue; start a run to improve that kernel instead"
        )
    return ""


def fork_cut(events: list[dict[str, Any]], step_seq: int, parent: object = "?") -> ForkCut:
    """What a fork of the run of `events` at step `step_seq` starts from.

    A question step is cut before its proposal (the fork decides it anew); any other step after it. Tool calls
    the model had made but whose results came after the cut are answered as not run, so the conversation keeps
    no dangling `tool_use`."""
    if problem := start_problem(events[0] if events else None):
        raise ForkError(problem)
    seqs = [e["seq"] for e in events]
    if step_seq not in seqs:
        raise ForkError(f"the parent has no step #{step_seq} (its steps are #0 to #{max(seqs)})")
    if seqs[: seqs.index(step_seq) + 1] != list(range(step_seq + 1)):
        raise ForkError(f"the parent's steps before #{step_seq} have gaps: the cut cannot be rebuilt")
    question = question_at(events, step_seq)
    end = question[0] if question else step_seq + 1  # the events kept: seq < end
    kept = [e for e in events if e["seq"] < end]
    state = RunState()
    for event in kept:
        state.apply(copy.deepcopy(event))
    conversation = state.messages
    for block in state.open_tool_calls:
        conversation.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": block["id"],
                        "content": NOT_RUN.format(parent=parent, seq=step_seq),
                        "is_error": True,
                    }
                ],
            }
        )
    files, warnings = workspace_at(kept)
    inherited = events[0]["payload"]["config"].get("fork")
    before = (inherited.get("played") if isinstance(inherited, dict) else None) or {}  # a fork of a fork
    played = {
        "turn": int(before.get("turn") or 0)
        + sum(e["kind"] == "model_message" and e["payload"].get("purpose", "turn") == "turn" for e in kept),
        "select_question": int(before.get("select_question") or 0)
        + sum(e["kind"] == "question_proposed" and e["payload"].get("by") != "human" for e in kept),
    }
    return ForkCut(
        step_seq=step_seq,
        conversation=conversation,
        files=files,
        warnings=warnings,
        question=question[1] if question else None,
        played=played,
        config=events[0]["payload"]["config"],
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _apply_edit(files: dict[str, str], tool_input: dict[str, Any]) -> str | None:
    """Apply one editor write that succeeded in the parent to `files`; a problem in words when it cannot be
    replayed (the file was not made by the editor: a shell command wrote it)."""
    command, path = tool_input.get("command"), tool_input.get("path")
    if not isinstance(path, str) or command == "view":
        return None
    path = posixpath.normpath(path)
    if command == "create" and isinstance(tool_input.get("file_text"), str):
        files[path] = tool_input["file_text"]
        return None
    if path not in files:
        return f"{path}: edited by the editor, but the trace never shows it written (a shell command made it)"
    text = files[path]
    if command == "str_replace":
        old, new = tool_input.get("old_str"), tool_input.get("new_str", "")
        if not isinstance(old, str) or not old or text.count(old) != 1 or not isinstance(new, str):
            return f"{path}: an edit that worked in the parent does not apply to the rebuilt text (a shell command changed it)"
        files[path] = text.replace(old, new, 1)
    elif command == "insert":
        line, insert = tool_input.get("insert_line"), tool_input.get("insert_text")
        lines = text.split("\n")
        if not isinstance(line, int) or not isinstance(insert, str) or not 0 <= line <= len(lines):
            return f"{path}: an insert that worked in the parent does not apply to the rebuilt text"
        files[path] = "\n".join(lines[:line] + insert.split("\n") + lines[line:])
    return None


def workspace_at(events: list[dict[str, Any]]) -> tuple[dict[str, str], list[str]]:
    """The files of the run's workspace after `events`, as far as the trace tells them, and what it cannot tell.

    The starting kernel, then every editor write whose result came back without error, in order. Where an
    evaluation recorded the kernel's hash and source, the rebuilt file is checked against it, and the recorded
    source wins (it is what the parent's file held). Shell commands that look as though they write files are
    listed: their output cannot be rebuilt."""
    config = events[0]["payload"]["config"]
    kernel = config.get("kernel_filename") or "kernel"
    files = {kernel: config.get("starting_kernel") or ""}
    warnings: list[str] = []
    inherited = config.get("fork") if isinstance(config.get("fork"), dict) else None
    if inherited:  # a fork of a fork starts from what its own parent's workspace held
        files.update(inherited.get("files") or {})
        warnings += [f"(inherited from run {inherited.get('parent_run')}) {w}" for w in inherited.get("warnings") or []]
    calls: dict[str, dict[str, Any]] = {}
    for event in events:
        kind, p = event["kind"], event["payload"]
        if kind == "tool_call":
            calls[p.get("call_id")] = p
        elif kind == "tool_result":
            call = calls.get(p.get("call_id")) or {}
            tool_input = given if isinstance(given := call.get("input"), dict) else {}
            if call.get("name") == "editor" and not p.get("is_error") and not p.get("invalid_input"):
                problem = _apply_edit(files, tool_input)
                if problem:
                    warnings.append(f"step #{event['seq']}: {problem}")
            elif call.get("name") == "shell" and _WRITES.search(str(tool_input.get("command") or "")):
                command = " ".join(str(tool_input.get("command")).split())[:160]
                warnings.append(
                    f"step #{event['seq']}: the shell command `{command}` may have written files; shell-made files "
                    f"are not in the trace, so the fork's workspace does not have them"
                )
        elif kind == "evaluation":
            path = posixpath.normpath(p.get("kernel_path") or kernel)
            result = p.get("result") if isinstance(p.get("result"), dict) else {}
            source = p.get("kernel_source") or result.get("kernel_source")
            recorded = p.get("kernel_sha256") or result.get("kernel_sha256")
            if recorded and recorded != _sha(files.get(path, "")):
                if isinstance(source, str) and _sha(source) == recorded:
                    warnings.append(
                        f"step #{event['seq']}: {path} differed from the editor's writes when it was evaluated "
                        f"(a shell command changed it); the evaluated source is used"
                    )
                    files[path] = source
                else:
                    warnings.append(
                        f"step #{event['seq']}: {path} does not match the hash the evaluation recorded; the fork's "
                        f"copy may differ from the parent's"
                    )
    return files, warnings


def conversation_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What the Messages API would refuse in `messages` (api_messages shape): the first message not the user's,
    roles not alternating, an empty message, a tool_result that answers no tool_use of the message before, a
    tool_use left unanswered by the next message. Empty when the conversation is valid."""
    problems = []
    if not messages:
        return ["the conversation is empty"]
    if messages[0]["role"] != "user":
        problems.append("the first message is not the user's")
    for i, m in enumerate(messages):
        if i and messages[i - 1]["role"] == m["role"]:
            problems.append(f"messages {i - 1} and {i} are both {m['role']}'s")
        if not m["content"]:
            problems.append(f"message {i} is empty")
        asked = (
            {b["id"] for b in messages[i - 1]["content"] if b.get("type") == "tool_use"}
            if i and messages[i - 1]["role"] == "assistant"
            else set()
        )
        answered = {b["tool_use_id"] for b in m["content"] if b.get("type") == "tool_result"}
        if m["role"] == "user":
            if answered - asked:
                problems.append(f"message {i} answers tool calls not made just before: {sorted(answered - asked)}")
            if asked - answered:
                problems.append(f"message {i} leaves tool calls unanswered: {sorted(asked - answered)}")
    last = messages[-1]
    if last["role"] == "assistant" and any(b.get("type") == "tool_use" for b in last["content"]):
        problems.append("the conversation ends with tool calls nobody answered")
    return problems


def first_call_messages(conversation: list[dict[str, Any]], closing: str | None = None) -> list[dict[str, Any]]:
    """The messages of the fork's first model turn: its conversation (and `closing`, the loop's note, when the
    model had the last word), as the agent sends them."""
    messages = [copy.deepcopy(m) for m in conversation]
    if closing is not None and messages and messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": [{"type": "text", "text": closing}]})
    return api_messages(messages)


def fork_wire(cut: ForkCut, parent_run: object, decision: dict[str, Any] | None) -> dict[str, Any]:
    """The `fork` object of an assignment (docs/protocol.md 2.10) for `cut` of run `parent_run`."""
    question = cut.question or {}
    return {
        "parent_run": parent_run,
        "step_seq": cut.step_seq,
        "conversation": cut.conversation,
        "files": cut.files,
        "warnings": cut.warnings,
        "question": {k: question.get(k) for k in ("text", "bank_key", "category", "decision_point")}
        if cut.question
        else None,
        "decision": decision,
        "played": cut.played,
        "kernel_filename": cut.config.get("kernel_filename"),
    }


def _safe_path(name: object) -> bool:
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name or "\0" in name:
        return False
    return not any(part in ("", ".", "..") for part in name.split("/"))


# The fork travels whole in the forked run's `started` status, at config.fork: envelope, payload and config are
# three levels above it, and every reader takes an event of EVENT_MAX_DEPTH levels at most. A parent's tool input
# may nest 32 levels (an imported trace's more), which a fork's conversation puts some ten levels further down.
FORK_MAX_DEPTH = EVENT_MAX_DEPTH - 3


def fork_problems(fork: object) -> list[str]:
    """What makes an assignment's `fork` unusable, in words (empty: usable). The worker checks it before it
    starts the run, and the server before it stores one, so that a bad fork fails at once and says why."""
    if not isinstance(fork, dict):
        return ["`fork` must be an object"]
    if nests_deeper(fork, FORK_MAX_DEPTH):  # first: the checks below walk it, recursively
        return [
            f"`fork` nests deeper than {FORK_MAX_DEPTH} levels (objects and arrays), so the run's started event "
            f"would be refused: fork at an earlier step"
        ]
    problems: list[str] = []
    if not isinstance(fork.get("parent_run"), (str, int)) or isinstance(fork.get("parent_run"), bool):
        problems.append("`fork.parent_run` must be the parent's id")
    seq = fork.get("step_seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        problems.append("`fork.step_seq` must be a step number")
    files = fork.get("files")
    if not isinstance(files, dict) or not all(isinstance(t, str) for t in files.values()):
        problems.append("`fork.files` must map paths to text")
    else:
        bad = [name for name in files if not _safe_path(name)]
        if bad:
            problems.append(f"`fork.files` has paths outside the workspace: {bad[:3]!r:.200}")
    conversation = fork.get("conversation")
    shaped = isinstance(conversation, list) and all(
        isinstance(m, dict)
        and m.get("role") in ("user", "assistant")
        and isinstance(m.get("content"), list)
        and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in m["content"])
        for m in conversation
    )
    if not shaped:
        problems.append("`fork.conversation` must be a list of {role: user|assistant, content: [blocks]}")
    else:
        try:
            # (a list of messages: `shaped` says so)
            invalid = conversation_problems(
                first_call_messages(cast("list[dict[str, Any]]", conversation), "(the loop's note)")
            )
        except (KeyError, TypeError, AttributeError) as exc:
            invalid = [f"a block lacks a field: {exc}"]
        problems += [f"`fork.conversation`: {p}" for p in invalid]
    decision = fork.get("decision")
    if decision is not None:
        if not isinstance(decision, dict) or decision.get("action") not in DECISIONS:
            problems.append(f"`fork.decision.action` must be one of {', '.join(DECISIONS)}")
        elif decision["action"] != "veto" and not (isinstance(decision.get("text"), str) and decision["text"].strip()):
            problems.append(f"`fork.decision` {decision['action']!r} needs the question's `text`")
        if not isinstance(fork.get("question"), dict):
            problems.append("`fork.decision` needs `fork.question`, the question the fork decides anew")
    played = fork.get("played", {})
    if not isinstance(played, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in played.values()
    ):
        problems.append("`fork.played` must map model-call purposes to counts")
    warnings = fork.get("warnings", [])
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        problems.append("`fork.warnings` must be a list of strings")
    return problems
