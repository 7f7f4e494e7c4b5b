"""How a run ends: each ending is a named exception raised from wherever it is noticed, caught once by the loop.

The loop never decides to stop by returning a flag through several layers; it raises one of these, and
`Agent.run` turns it into the final `status` event.
"""


class RunEnded(Exception):
    """Base: the run is over. `status` is the final run status, `reason` the machine-readable why."""

    status = "failed"
    reason = "internal_error"

    def __init__(self, message: str = "", **details: object) -> None:
        super().__init__(message or self.reason)
        self.details = details


class GoalMet(RunEnded):
    status = "succeeded"
    reason = "goal_met"


class BudgetExhausted(RunEnded):
    status = "failed"

    def __init__(self, budget: str, used: float, limit: float | None) -> None:
        self.reason = f"budget_{budget}"
        super().__init__(f"{budget} budget exhausted: used {used} of {limit}", budget=budget, used=used, limit=limit)


class GoalUnreachable(RunEnded):
    """No evaluation on this worker can meet the run's goal: a library of its best_library goal cannot run here
    (not installed), so every verdict here misses it. The run ends before its next model call rather than spend
    its budget; the detail names the library and says why it did not run."""

    status = "failed"
    reason = "goal_unreachable"


class StoppedByHuman(RunEnded):
    status = "stopped"
    reason = "stopped_by_human"


class ModelFailed(RunEnded):
    """The model could not be reached after all retries, or answered with something unusable. `charged_unread`:
    an attempt of the call had begun its reply (the server may have charged it) and its usage was never read."""

    status = "failed"
    reason = "model_error"
    charged_unread = False

    def __init__(self, message: str = "", *, charged_unread: bool | None = None, **details: object) -> None:
        super().__init__(message, **details)
        if charged_unread is not None:  # (else the class's: ReplyTooLarge's is True)
            self.charged_unread = charged_unread


class ReplyTooLarge(ModelFailed):
    """The model's reply passed the size limit and was not read to its end. The call was made, and charged, but
    its usage comes at a reply's end: the run's cost becomes a floor (a usage event of unknown cost)."""

    charged_unread = True


class InvalidToolInputs(ModelFailed):
    """The model sent tool calls whose input was not a JSON object, more times in a row than the policy allows."""

    reason = "invalid_tool_input"


class ReplayFinished(RunEnded):
    """The replay has nothing more to play: the run wants a turn after the last recorded one, or a call the
    recording never made (a question selection after a reviewer's veto). Not a failure: the run is stopped, as a
    recording that has nothing more to say stops it; the detail says which, and how the recorded run ended."""

    status = "stopped"
    reason = "replay_finished"


class RunParked(Exception):
    """Not an ending: the run waits for a person (a reviewer's decision) and its worker takes other runs meanwhile.
    Its trace holds its whole state (the proposal, the `waiting_review` status), so the worker resumes it from the
    trace when the decision arrives (agentloop/worker/parking.py). `Agent.run` lets it pass, writing nothing."""


class ConfigError(ValueError):
    """Bad settings given by a person (CLI flags, an assignment). The message says what to change."""
