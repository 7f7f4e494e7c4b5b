"""Which questions are followed by gains: attribution over plain run histories. No Django here.

For every question that was asked in a run (approved or edited, not vetoed, not still pending):

- `before`: the best verified speedup over the run's goal baseline at the moment it was asked, counting the
  run's reference (the starting kernel's own speedup, when it was measured) and every verified evaluation
  at or before the question;
- `after`: the best verified speedup at the end of its window, which runs from the question up to the next
  asked question, or to the end of the run;
- `gain`: after / before, a ratio (x1.00: no rise), so that gains compare across tasks whose speedups differ
  in scale; None when nothing was verified by the time it was asked, since a rise from nothing has no ratio;
- `large_gain`: gain >= the large-gain ratio (a setting; `DEFAULT_LARGE_GAIN_RATIO` here).

Speedups only rise within a window: the best verified kernel of a run never gets worse, and a slower kernel
after a question is not a loss the question caused. Aggregates use the geometric mean of gains, the mean
that fits ratios. Positions order the events of one run (a step number, or a timestamp); events at the same
position as a question count as before it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

# A question is said to be followed by a large gain when the best verified speedup rose by 20% or more
# before the next question.
DEFAULT_LARGE_GAIN_RATIO = 1.2

ASKED, VETOED, PENDING = "asked", "vetoed", "pending"
OUTCOMES = (ASKED, VETOED, PENDING)


@dataclass(frozen=True)
class QuestionEvent:
    """A question of one run. Only `asked` ones get attributions and end another question's window."""

    question_id: Any
    position: Any  # orders events within the run: a step number or a timestamp
    key: str | None = None  # bank entry key; None for a reviewer's own question
    category: str = ""
    source: str = ""  # human, bank (by rule) or self (by the agent)
    decision_point: str = ""
    outcome: str = ASKED

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown question outcome {self.outcome!r} (known: {', '.join(OUTCOMES)})")


@dataclass(frozen=True)
class Measurement:
    """A verified evaluation (measured by a harness of the site on the task's full set, correct on every scenario:
    the caller's to decide, `runs.selectors_bank`), with its speedup over the goal baseline."""

    position: Any
    speedup: float


@dataclass(frozen=True)
class RunHistory:
    run_id: Any
    questions: list[QuestionEvent] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)
    reference: float | None = None  # the starting kernel's own speedup over the goal baseline, when measured


@dataclass(frozen=True)
class Attribution:
    run_id: Any
    question_id: Any
    key: str | None
    category: str
    source: str
    decision_point: str
    before: float | None
    after: float | None
    gain: float | None
    large_gain: bool | None
    window_evaluations: int  # verified evaluations inside its window

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Aggregate:
    """The figures of one group (a bank key, a category, a source) across runs."""

    group: str
    asked: int  # times it was asked
    attributed: int  # of those, how many had a gain (something verified before it)
    mean_gain: float | None  # geometric mean of the gains
    large_gains: int
    large_gain_rate: float | None  # large_gains / attributed
    runs: int  # distinct runs in which it was asked
    vetoed: int = 0  # proposals a reviewer vetoed (not counted in `asked`)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_ratio(large_gain_ratio: float) -> float:
    ratio = float(large_gain_ratio)
    if not math.isfinite(ratio) or ratio < 1.0:
        raise ValueError(f"the large-gain ratio must be a finite number >= 1.0, not {large_gain_ratio!r}")
    return ratio


def _best(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def attribute_run(history: RunHistory, large_gain_ratio: float = DEFAULT_LARGE_GAIN_RATIO) -> list[Attribution]:
    """One attribution per asked question of the run, in the order they were asked."""
    ratio = _check_ratio(large_gain_ratio)
    for m in history.measurements:
        if m.speedup is None or not math.isfinite(m.speedup) or m.speedup < 0:
            raise ValueError(
                f"run {history.run_id}: a verified speedup must be a non-negative number, not {m.speedup!r}"
            )
    asked = sorted((q for q in history.questions if q.outcome == ASKED), key=lambda q: q.position)
    measurements = sorted(history.measurements, key=lambda m: m.position)

    attributions = []
    for i, question in enumerate(asked):
        next_position = asked[i + 1].position if i + 1 < len(asked) else None
        before = _best(history.reference, *(m.speedup for m in measurements if m.position <= question.position))
        window = [
            m.speedup
            for m in measurements
            if m.position > question.position and (next_position is None or m.position <= next_position)
        ]
        after = _best(before, *window)
        # (after is a number wherever before is one: the best of it and the window; mypy does not follow _best)
        gain = after / before if before is not None and before > 0 else None  # type: ignore[operator]
        attributions.append(
            Attribution(
                run_id=history.run_id,
                question_id=question.question_id,
                key=question.key,
                category=question.category,
                source=question.source,
                decision_point=question.decision_point,
                before=before,
                after=after,
                gain=gain,
                # A tiny tolerance: a gain computed as exactly the ratio should not miss it by a rounding error.
                large_gain=None if gain is None else gain >= ratio * (1 - 1e-12),
                window_evaluations=len(window),
            )
        )
    return attributions


def attribute_runs(
    histories: Iterable[RunHistory], large_gain_ratio: float = DEFAULT_LARGE_GAIN_RATIO
) -> list[Attribution]:
    return [a for history in histories for a in attribute_run(history, large_gain_ratio)]


def geometric_mean(values: list[float]) -> float | None:
    if not values:
        return None
    if any(v <= 0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


def aggregate(
    attributions: Iterable[Attribution],
    by: str = "key",
    vetoed: dict[str, int] | None = None,
) -> dict[str, Aggregate]:
    """Figures per group, keyed and sorted by group; `by` is an Attribution field (key, category, source,
    decision_point). Attributions whose group is empty (a reviewer's own question has no key) are left out.
    Groups that were only ever vetoed appear with asked == 0."""
    if by not in ("key", "category", "source", "decision_point"):
        raise ValueError(f"cannot aggregate by {by!r}: use key, category, source or decision_point")
    groups: dict[str, list[Attribution]] = defaultdict(list)
    for a in attributions:
        group = getattr(a, by)
        if group:
            groups[group].append(a)
    vetoed = {g: n for g, n in (vetoed or {}).items() if g}
    result = {}
    for group in sorted(set(groups) | set(vetoed)):
        members = groups.get(group, [])
        gains = [a.gain for a in members if a.gain is not None]
        large = sum(1 for a in members if a.large_gain)
        result[group] = Aggregate(
            group=group,
            asked=len(members),
            attributed=len(gains),
            mean_gain=geometric_mean(gains),
            large_gains=large,
            large_gain_rate=(large / len(gains)) if gains else None,
            runs=len({a.run_id for a in members}),
            vetoed=vetoed.get(group, 0),
        )
    return result


def veto_counts(histories: Iterable[RunHistory], by: str = "key") -> dict[str, int]:
    """How many proposals were vetoed, per group (`by` is a QuestionEvent field: key, category, source...)."""
    counts: dict[str, int] = defaultdict(int)
    for history in histories:
        for q in history.questions:
            if q.outcome == VETOED and getattr(q, by):
                counts[getattr(q, by)] += 1
    return dict(counts)


def effectiveness(
    histories: Iterable[RunHistory],
    by: str = "key",
    large_gain_ratio: float = DEFAULT_LARGE_GAIN_RATIO,
) -> dict[str, Aggregate]:
    """Attribution and aggregation in one call: the figures per `by` group over these runs."""
    histories = list(histories)
    return aggregate(attribute_runs(histories, large_gain_ratio), by=by, vetoed=veto_counts(histories, by=by))


def selection_stats(per_key: dict[str, Aggregate]) -> dict[str, dict[str, Any]]:
    """The per-key figures in the shape `questionbank.selection` shows to the model."""
    return {
        key: {"asked": agg.asked, "mean_gain": agg.mean_gain, "large_gain_rate": agg.large_gain_rate}
        for key, agg in per_key.items()
    }
