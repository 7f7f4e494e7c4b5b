"""Which questions are followed by gains: attribution over plain run histories. No Django here.

For every question that was asked in a run (approved or edited, not vetoed, not still pending):

- `before`: the best verified speedup over the run's goal baseline at the moment it was asked, counting the
  run's reference (the starting kernel's own speedup, when it was measured) and every verified evaluation
  at or before the question; `before_low`/`before_high`, the 95% interval of the measurement that set it;
- `after`: the best verified speedup at the end of its window, which runs from the question up to the next
  asked question, or to the end of the run; `after_low`/`after_high`, the interval of the measurement that set
  it (the same measurement as `before`'s where nothing in the window beat it);
- `gain`: after / before, a ratio (x1.00: no rise), so that gains compare across tasks whose speedups differ
  in scale; None when nothing was verified by the time it was asked, since a rise from nothing has no ratio.
  `gain_low`/`gain_high`: its interval, after_low / before_high to after_high / before_low (the ratio lies there
  whenever both medians lie in their intervals: the rule `gpu_harness.figures` applies to every speed-up);
- `large_gain`: the rise is at least the large-gain ratio (a setting; `DEFAULT_LARGE_GAIN_RATIO` here) BEYOND
  THE NOISE: `gain_low` >= the ratio, the slowest the after-kernel can be over the fastest the before-kernel can
  be. A speed-up inside the noise is no speed-up: 1.00x to 1.25x whose intervals overlap is not a large gain.
  This is the rule the goal check uses (`figures.clears_target`: the interval's low end reaches the target),
  applied to the ratio of two best speedups. It is None (unknown) where either measurement has no interval (a
  verdict from before the harness measured one, or one whose noise is unknown), even when the point gain is
  below the ratio: deciding those at their point and leaving only the large ones unknown would make the known
  ones all small, and the rate below would be biased low on old runs. Whether an interval is known does not
  depend on the gain's size, so the rate over the known ones is not biased by leaving the unknown ones out.
  `large_gain_label` says the same in words: LARGE_GAIN, NOT_LARGE_GAIN, NOISE_UNKNOWN or NO_GAIN.

Speedups only rise within a window: the best verified kernel of a run never gets worse, and a slower kernel
after a question is not a loss the question caused. Where two measurements share the best speedup, the first
(the reference, then by position) is the best, and its interval is the best's. Aggregates use the geometric mean
of gains, the mean that fits ratios, with its interval (`figures.geomean_of_intervals`: None unless every gain has
one); they count the large gains, the attributions whose large gain is unknown (`large_gain_unknown`), and rate
the large gains over the attributions whose large gain is known. Positions order the events of one run (a step
number, or a timestamp); events at the same position as a question count as before it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from gpu_harness import figures

# A question is said to be followed by a large gain when the best verified speedup rose by 20% or more, beyond
# the noise, before the next question.
DEFAULT_LARGE_GAIN_RATIO = 1.2

# What an attribution's `large_gain` says, in words (pages and exports write these).
LARGE_GAIN = "large gain"
NOT_LARGE_GAIN = "not a large gain"
NOISE_UNKNOWN = "noise unknown"
NO_GAIN = "no gain measured"

Interval = tuple[float, float]

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
    # The 95% interval (low, high) of that speedup (`gpu_harness.figures.geomean_interval`); None: noise unknown.
    interval: Interval | None = None


@dataclass(frozen=True)
class RunHistory:
    run_id: Any
    questions: list[QuestionEvent] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)
    reference: float | None = None  # the starting kernel's own speedup over the goal baseline, when measured
    reference_interval: Interval | None = None  # the interval of that speedup; None: noise unknown


@dataclass(frozen=True)
class Attribution:
    run_id: Any
    question_id: Any
    key: str | None
    category: str
    source: str
    decision_point: str
    before: float | None
    before_low: float | None  # the interval of `before`'s measurement (None: unknown, or no `before`)
    before_high: float | None
    after: float | None
    after_low: float | None
    after_high: float | None
    gain: float | None
    gain_low: float | None  # after_low / before_high: the smallest the rise can be within the noise
    gain_high: float | None  # after_high / before_low
    large_gain: bool | None  # gain_low >= the ratio; None: no gain, or its noise unknown
    large_gain_label: str  # LARGE_GAIN, NOT_LARGE_GAIN, NOISE_UNKNOWN or NO_GAIN
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
    mean_gain_low: float | None  # its interval (figures.geomean_of_intervals); None unless every gain has one
    mean_gain_high: float | None
    large_gains: int  # large beyond the noise
    large_gain_unknown: int  # attributed, but their noise unknown: neither large nor not
    large_gain_rate: float | None  # large_gains / (attributed - large_gain_unknown); None where that is 0
    runs: int  # distinct runs in which it was asked
    vetoed: int = 0  # proposals a reviewer vetoed (not counted in `asked`)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_ratio(large_gain_ratio: float) -> float:
    ratio = float(large_gain_ratio)
    if not math.isfinite(ratio) or ratio < 1.0:
        raise ValueError(f"the large-gain ratio must be a finite number >= 1.0, not {large_gain_ratio!r}")
    return ratio


def _check_measurements(history: RunHistory) -> None:
    for m in history.measurements:
        if m.speedup is None or not math.isfinite(m.speedup) or m.speedup < 0:
            raise ValueError(
                f"run {history.run_id}: a verified speedup must be a non-negative number, not {m.speedup!r}"
            )
        if m.interval is not None and _interval_problem(m.interval):
            raise ValueError(f"run {history.run_id}: {_interval_problem(m.interval)}")
    if history.reference_interval is not None and _interval_problem(history.reference_interval):
        raise ValueError(f"run {history.run_id}: the reference: {_interval_problem(history.reference_interval)}")


def _interval_problem(interval: Any) -> str:
    """ "" for two positive finite numbers, low <= high (as `figures` makes them); else what is wrong."""
    pair = list(interval) if isinstance(interval, (list, tuple)) else []
    numbers = len(pair) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in pair
    )
    if numbers and pair[0] <= pair[1]:
        return ""
    return f"an interval must be two positive numbers, low <= high, not {interval!r}"


def _best(candidates: list[Measurement]) -> Measurement | None:
    """The measurement with the highest speedup; the first of those where several share it."""
    best = None
    for m in candidates:
        if best is None or m.speedup > best.speedup:
            best = m
    return best


def _gain_interval(before: Measurement, after: Measurement) -> Interval | None:
    """The interval of after / before: after's low over before's high to after's high over before's low."""
    if before.interval is None or after.interval is None:
        return None
    return after.interval[0] / before.interval[1], after.interval[1] / before.interval[0]


def _large_gain(gain: float | None, gain_interval: Interval | None, ratio: float) -> bool | None:
    """Large beyond the noise: the interval's low end reaches the ratio. None: no gain, or its noise unknown."""
    if gain is None or gain_interval is None:
        return None
    # A tiny tolerance: a low end computed as exactly the ratio should not miss it by a rounding error.
    return gain_interval[0] >= ratio * (1 - 1e-12)


def large_gain_label(gain: float | None, large_gain: bool | None) -> str:
    """What a large gain is, in words: NO_GAIN, NOISE_UNKNOWN, LARGE_GAIN or NOT_LARGE_GAIN."""
    if gain is None:
        return NO_GAIN
    if large_gain is None:
        return NOISE_UNKNOWN
    return LARGE_GAIN if large_gain else NOT_LARGE_GAIN


def _ends(interval: Interval | None) -> tuple[float | None, float | None]:
    return (None, None) if interval is None else interval


def _attribution(
    history: RunHistory, question: QuestionEvent, before: Measurement | None, window: list[Measurement], ratio: float
) -> Attribution:
    """One question's attribution: `before` the best when it was asked, `window` the measurements after it."""
    after = _best([before, *window]) if before is not None else _best(window)
    gain, gain_interval = None, None
    if before is not None and before.speedup > 0 and after is not None:
        gain, gain_interval = after.speedup / before.speedup, _gain_interval(before, after)
    large_gain = _large_gain(gain, gain_interval, ratio)
    before_low, before_high = _ends(before.interval if before is not None else None)
    after_low, after_high = _ends(after.interval if after is not None else None)
    gain_low, gain_high = _ends(gain_interval)
    return Attribution(
        run_id=history.run_id,
        question_id=question.question_id,
        key=question.key,
        category=question.category,
        source=question.source,
        decision_point=question.decision_point,
        before=before.speedup if before is not None else None,
        before_low=before_low,
        before_high=before_high,
        after=after.speedup if after is not None else None,
        after_low=after_low,
        after_high=after_high,
        gain=gain,
        gain_low=gain_low,
        gain_high=gain_high,
        large_gain=large_gain,
        large_gain_label=large_gain_label(gain, large_gain),
        window_evaluations=len(window),
    )


def attribute_run(history: RunHistory, large_gain_ratio: float = DEFAULT_LARGE_GAIN_RATIO) -> list[Attribution]:
    """One attribution per asked question of the run, in the order they were asked."""
    ratio = _check_ratio(large_gain_ratio)
    _check_measurements(history)
    asked = sorted((q for q in history.questions if q.outcome == ASKED), key=lambda q: q.position)
    measurements = sorted(history.measurements, key=lambda m: m.position)
    # The reference counts before every question, wherever it was measured: it stands first.
    reference = (
        [Measurement(position=None, speedup=history.reference, interval=history.reference_interval)]
        if history.reference is not None
        else []
    )

    attributions = []
    for i, question in enumerate(asked):
        next_position = asked[i + 1].position if i + 1 < len(asked) else None
        before = _best(reference + [m for m in measurements if m.position <= question.position])
        window = [
            m
            for m in measurements
            if m.position > question.position and (next_position is None or m.position <= next_position)
        ]
        attributions.append(_attribution(history, question, before, window, ratio))
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
        result[group] = _aggregate_group(group, members, vetoed.get(group, 0))
    return result


def _aggregate_group(group: str, members: list[Attribution], vetoed: int) -> Aggregate:
    """The figures of one group: the large-gain rate is over the attributions whose large gain is known."""
    attributed = [a for a in members if a.gain is not None]
    known = [a for a in attributed if a.large_gain is not None]
    large = sum(1 for a in known if a.large_gain)
    gain_intervals: list[Interval | None] = [
        None if a.gain_low is None or a.gain_high is None else (a.gain_low, a.gain_high) for a in attributed
    ]
    mean_low, mean_high = _ends(figures.geomean_of_intervals(gain_intervals))
    return Aggregate(
        group=group,
        asked=len(members),
        attributed=len(attributed),
        mean_gain=geometric_mean([a.gain for a in attributed if a.gain is not None]),
        mean_gain_low=mean_low,
        mean_gain_high=mean_high,
        large_gains=large,
        large_gain_unknown=len(attributed) - len(known),
        large_gain_rate=(large / len(known)) if known else None,
        runs=len({a.run_id for a in members}),
        vetoed=vetoed,
    )


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
