"""The run's standing against its goal, kept from the harness's verdicts: each verdict recorded as an `evaluation`
event with the figures derived from it (agentloop/goal.py), the best verified speedup, whether the goal is met,
whether a verdict calls for the loop's own full check, and the evaluation budget.

The loop calls it; it never runs the harness. What it knows it reads from the run's state (agentloop/state.py),
which the events it emits keep, so a resumed run stands exactly where its trace left it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentloop.config import RunConfig
from agentloop.detectors import best_words
from agentloop.errors import BudgetExhausted, GoalUnreachable
from agentloop.goal import covers, goal_met, speedup_over, verified_speedup, worth_a_goal_check
from agentloop.state import RunState
from gpu_harness import figures

EVALUATIONS = "evaluations"  # the budget a refused evaluate call names (tool_result's `budget_spent`)


class Scoreboard:
    def __init__(
        self,
        state: RunState,
        config: RunConfig,
        full_ids: list[str],
        emit: Callable[..., dict[str, Any]],
        *,
        libraries: list[str],
    ) -> None:
        self.state = state
        self.goal = config.goal
        self.evaluation_budget = config.budgets.evaluations  # the model's evaluate calls; None: no limit
        self.full_ids = full_ids  # the task's full scenario set: the goal is judged on it
        self.libraries = libraries  # the task's libraries: a best_library goal is judged over all of them
        self.emit = emit

    # ---------------------------------------------------------------------------- the evaluation budget
    def refusal(self) -> str | None:
        """The answer to one more evaluate call once the model's calls have used the budget; None while some is
        left. The call is answered with it (so the conversation stays whole) and the run then ends on the budget
        (`check_budget`), before the next model call."""
        used, limit = len(self.state.tool_evaluations), self.evaluation_budget
        if limit is None or used < limit:
            return None
        return (
            f"error: nothing was evaluated: the run's evaluation budget is spent ({used} of {limit} used). "
            f"The run ends on it."
        )

    def check_budget(self) -> None:
        """Ends the run once an evaluate call was refused for the budget (from the state: a resumed run too)."""
        if self.state.budget_spent == EVALUATIONS:
            raise BudgetExhausted(EVALUATIONS, len(self.state.tool_evaluations), self.evaluation_budget)

    def check_reachable(self) -> None:
        """Ends the run once a verdict said a library of its best_library goal cannot run where it ran: no verdict
        there can meet the goal (`figures.goal_met`), so another turn would spend budget on a run that cannot
        succeed. From the state, so a resumed run ends on it too."""
        unavailable = self.state.libraries_unavailable
        if unavailable:
            # the library first: the run's page keeps the first 200 characters of this (Run.status_reason)
            why = "; ".join(unavailable.values())  # each note names its library ("quack is not installed")
            raise GoalUnreachable(
                f"{', '.join(unavailable)} cannot run on this worker ({why}), so the goal, {self.goal.speedup:g}x "
                f"over {self.goal.baseline}, cannot be met here: it is met only by an evaluation that times every "
                f"library of the task. Run it on a worker where {'they are' if len(unavailable) > 1 else 'it is'} "
                "installed",
                libraries=sorted(unavailable),
            )

    # ------------------------------------------------------------------------------------ the verdicts
    def record(
        self, result: dict[str, Any], purpose: str, scenarios: str | list[str], kernel: str, call_id: str | None
    ) -> dict[str, Any]:
        """Emit the `evaluation` event of a verdict (`purpose` "tool" or "goal_check"); its payload."""
        goal = self.goal
        verified = verified_speedup(result, goal)
        best = self.state.best_speedup
        if verified is not None and (best is None or verified > best):
            best = verified
        payload = {
            # The source travels once, inside `result` (a 600 KB kernel made a 1.2 MB event when it went twice).
            "purpose": purpose,
            "call_id": call_id,
            "scenario_set": scenarios,
            "kernel_path": kernel,
            "kernel_sha256": result.get("kernel_sha256", ""),
            "result": result,
            "goal": {"baseline": goal.baseline, "speedup": goal.speedup},
            "speedup": speedup_over(result, goal.baseline),
            "full": covers(result, self.full_ids),
            "goal_met": goal_met(result, goal, self.full_ids, self.libraries),
            "best_speedup": best,
            "evaluations_used": len(self.state.tool_evaluations) + (1 if purpose == "tool" else 0),
        }
        self.emit("evaluation", payload)
        return payload

    def worth_confirming(self, result: dict[str, Any]) -> bool:
        """A verdict that meets the target on the scenarios it ran: the loop confirms it by a full check of its own
        (a quick verdict never ends a run by itself). Not where a best_library goal's library did not run: a check
        on the same host would miss it again."""
        return worth_a_goal_check(result, self.goal, self.libraries)

    def libraries_missing(self, result: dict[str, Any]) -> list[str]:
        """The task's libraries that a best_library goal needs and this verdict did not time ([] for any other
        goal): while one is missing, no verdict of this host meets the goal."""
        return figures.missing_libraries(result, self.goal.baseline, self.libraries)

    def check_due_at_end(self, kernel_sha256: str) -> bool:
        """The model ended its turn with this source: check it, unless the verdicts on it already rule the goal
        out (a goal check, a full verdict, one short of the target, or one that missed a library of a best_library
        goal). A source never judged is checked."""
        return all(
            e.purpose != "goal_check"
            and not e.full
            and e.all_correct
            and e.speedup is not None
            and e.speedup >= self.goal.speedup
            and e.libraries_complete
            for e in self.state.evaluated(kernel_sha256)
        )

    # ---------------------------------------------------------------------------------- what is said
    def verdict_text(self, result: dict[str, Any], payload: dict[str, Any]) -> str:
        """What the evaluate tool answers: the harness's table, then the verdict against the goal."""
        try:
            from gpu_harness import EvalResult
            from gpu_harness.report import render_table

            table = render_table(EvalResult.from_dict(result))
        except Exception as exc:
            table = f"{result.get('status')}: {result.get('reason')} (table unavailable: {exc})"
        goal = self.goal
        # the run's best as every page names it (best_words): "verified" only where a full set set it; the state
        # has taken this evaluation's event already
        text = (
            f"{table}\nGoal: {goal.speedup:g}x over {goal.baseline} on the full set, every scenario correct. "
            f"This evaluation: {'n/a' if payload['speedup'] is None else format(payload['speedup'], '.3g') + 'x'}"
            f" ({'full' if payload['full'] else 'not the full set'}). So far, the run's {best_words(self.state)}."
        )
        missing = self.libraries_missing(result)
        if missing:
            text += (
                f" The goal is over every library of the task; this evaluation did not time {', '.join(missing)} "
                "(the table's notes say why), so it cannot meet the goal, and no evaluation where they do not run can."
            )
            if figures.libraries_unavailable(result, goal.baseline):
                text += " They cannot run on this worker, so the run ends after this turn."
        return text

    def goal_status(self) -> str:
        """The run's standing in a line, for the note that tells the model the task is not finished."""
        return (
            f"{best_words(self.state)} (over {self.goal.baseline}); target {self.goal.speedup:g}x on a full "
            "evaluation with every scenario correct"
        )
