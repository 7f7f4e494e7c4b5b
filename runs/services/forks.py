"""Forks: a new run that continues another from one of its steps, with its own decision where the step was a
question (docs/fork.md).

The cut is agentloop.fork's (a pure function of the parent's stored steps, which are its events); this module
checks the operator's decision, keeps the result on the new run (`Run.fork`, the assignment's `fork` object,
docs/protocol.md 2.10) and refuses a fork too large for the worker socket before anything is stored."""

from __future__ import annotations

import json
from typing import cast

from django.db import transaction

from agentloop.fork import ForkCut, ForkError, fork_cut, fork_problems, fork_wire
from agentloop.protocol import EVENT_MAX_BYTES
from runs.model_options import model_options, model_refusal
from runs.models import Run, Step
from runs.nul_escape import unescape_nul
from runs.services.errors import ServiceError
from runs.services.questions import PERSON_TEXT_MAX, shows_something
from runs.services.runs import run_start

# The fork travels twice: in the `assign` message (MESSAGE_MAX_BYTES, 8 MiB) and, whole, in the forked run's
# `started` event, whose `event` message the server stores only up to EVENT_MAX_BYTES (4 MiB). The started
# event also holds the prompts and the starting kernel (twice: in the config and in the task prompt), so the
# fork itself is held to the event limit less room for those.
FORK_HEADROOM_BYTES = 512 * 1024


def wire_bytes(value) -> int:
    """Its size as the worker sends it: compact JSON with every non-ASCII character escaped (agentloop's window)."""
    return len(json.dumps(value, separators=(",", ":")))


def fork_max_bytes(starting_kernel: str) -> int:
    return EVENT_MAX_BYTES - FORK_HEADROOM_BYTES - 2 * wire_bytes(starting_kernel)


def parent_events(run: Run, up_to_seq: int) -> list[dict]:
    """The parent's stored steps up to `up_to_seq`, as the events they were (docs/protocol.md 1.1)."""
    steps = (
        Step.objects.filter(run=run, seq__lte=up_to_seq).order_by("seq").values("seq", "kind", "payload", "created_at")
    )
    return [
        {
            "run_id": run.pk,
            "seq": s["seq"],
            "kind": s["kind"],
            "payload": unescape_nul(s["payload"]),  # as it was sent (runs/nul_escape.py)
            "ts": s["created_at"].isoformat(),
        }
        for s in steps
    ]


def fork_preview(*, parent: Run, step_seq: int) -> ForkCut:
    """What a fork of `parent` at `step_seq` would start from (the fork page shows it before the operator
    decides); ServiceError when the step cannot be forked."""
    try:
        return fork_cut(parent_events(parent, step_seq), step_seq, parent=parent.pk)
    except ForkError as exc:
        raise ServiceError(f"run {parent.pk} cannot be forked at step #{step_seq}: {exc}") from None


def fork_decision(
    cut: ForkCut, *, action: str, bank_key: str = "", text: str = "", user=None, task_target: str | None = None
) -> dict | None:
    """The fork's decision at its question, as the worker receives it: None for a step that is not a question;
    for a question, a veto, a bank question (by key, its text from the bank; one that applies to the run's
    `task_target`) or the operator's own text."""
    by = user.get_username() if user is not None else ""
    if cut.question is None:
        if action:
            raise ServiceError(f"step #{cut.step_seq} is not a question: there is no decision to take there")
        return None
    if action == "veto":
        return {"action": "veto", "by": by}
    if action == "bank":
        if not bank_key:  # the form's "—": nothing picked (not a question the bank lacks)
            raise ServiceError("pick the bank question the fork asks instead")
        from questionbank.selectors import bank_entries

        entry = next((e for e in bank_entries(task_target=task_target) if e.key == bank_key), None)
        if entry is None:
            where = f" for a {task_target} task" if task_target else ""
            raise ServiceError(f"the bank has no active question {bank_key!r}{where}")
        return {"action": "bank", "bank_key": entry.key, "text": entry.text, "category": entry.category, "by": by}
    if action == "write":
        text = (text or "").strip()
        if not shows_something(text):
            raise ServiceError("write the question the fork asks instead")
        if len(text) > PERSON_TEXT_MAX:  # the form's limit, for a caller the form is not in front of
            raise ServiceError(
                f"the fork's own question has at most {PERSON_TEXT_MAX:,} characters ({len(text):,} given)"
            )
        return {"action": "write", "text": text, "by": by}
    raise ServiceError(f"step #{cut.step_seq} is a question: veto it, pick a bank question, or write one")


def run_fork(
    *,
    parent: Run,
    step_seq: int,
    model: str = "",
    action: str = "",
    bank_key: str = "",
    text: str = "",
    user=None,
) -> Run:
    """Queue a fork of `parent` at step `step_seq`: the same task, goal, budgets and review mode, the model the
    operator picks (the parent's when none), starting from the parent's conversation and workspace at that step
    and, at a question, from the operator's decision instead of the parent's."""
    model = (model or parent.model).strip()
    if not model or len(model) > cast(int, Run._meta.get_field("model").max_length):
        raise ServiceError("the fork needs a model id of at most 120 characters")
    if refusal := model_refusal(model, model_options()):  # what cannot run here is refused, not queued to fail
        raise ServiceError(f"the fork cannot start: {refusal}")
    cut = fork_preview(parent=parent, step_seq=step_seq)
    decision = fork_decision(
        cut, action=action, bank_key=bank_key, text=text, user=user, task_target=parent.task.target
    )
    wire = fork_wire(cut, parent.pk, decision)
    problems = fork_problems(wire)
    if problems:  # the worker would refuse it: say so now, not after a claim
        raise ServiceError(f"the fork cannot start: {'; '.join(problems)}")
    size = wire_bytes(wire)
    limit = fork_max_bytes(parent.starting_kernel)
    if size > limit:
        raise ServiceError(
            f"the fork at step #{step_seq} is {size} bytes (conversation and files), over the {limit} bytes the "
            f"worker socket carries in a run's first event: fork at an earlier step"
        )
    # The goal the parent's agent pursued (its started config): the same as the parent's own on a run of this
    # server, and the recording's on an imported trace, whose run row has only its task's.
    goal = cut.config.get("goal") if isinstance(cut.config.get("goal"), dict) else {}
    baseline, speedup = goal.get("baseline"), goal.get("speedup")
    if not (isinstance(baseline, str) and baseline and isinstance(speedup, (int, float)) and speedup > 0):
        baseline, speedup = parent.goal_baseline, parent.goal_speedup
    with transaction.atomic():
        run = run_start(
            task=parent.task,
            model=model,
            started_by=user,
            starting_kernel=cut.config.get("starting_kernel") or parent.starting_kernel,
            review_mode=parent.review_mode,
            review_timeout_s=parent.review_timeout_s,
            goal_baseline=baseline,
            goal_speedup=speedup,
            budget_steps=parent.budget_steps,
            budget_tokens=parent.budget_tokens,
            budget_cost_usd=parent.budget_cost_usd,
            budget_wall_s=parent.budget_wall_s,
            budget_evaluations=parent.budget_evaluations,
        )
        run.parent, run.fork_seq, run.fork = parent, step_seq, wire
        run.save(update_fields=["parent", "fork_seq", "fork", "updated_at"])
    return run
