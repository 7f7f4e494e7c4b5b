"""A suite's scoreboard figures: fast_p and its confidence interval over problems. Pure Python, no Django.

fast_p (KernelBench's metric): the share of an arm's problems whose kernel is correct AND faster than torch eager
by more than p (p = 0: correct at all). Each row is one problem of the arm, as the harness measured it: `correct`
(a verified evaluation, full set and measured here, correct on every scenario) and `eager` (the best verified
speed-up over eager, None where none was measured). A problem with no verified evaluation is a row with
`correct` False: it counts as not fast, and every problem of the arm is in the denominator. `eager_low`, the low
end of that speed-up's 95% interval where the harness measured one, is what is held to p: a speed-up inside the
noise is no speed-up.

The interval is Wilson's score interval for a proportion: unlike the normal approximation it stays inside
[0, 1] and is usable at 0 or n successes and at the small n of a suite (10 to 100 problems).
"""

from __future__ import annotations

import math

# The thresholds a scoreboard reports, KernelBench's: correct, faster than eager, 1.5x and 2x eager.
FAST_P = (0.0, 1.0, 1.5, 2.0)
Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95% interval


def wilson_interval(successes: int, total: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of `successes` out of `total`; None when there is nothing to estimate (total 0)."""
    if total <= 0:
        return None
    if not 0 <= successes <= total:
        raise ValueError(f"successes must lie in 0..{total}, not {successes}")
    share = successes / total
    z2 = z * z
    centre = (share + z2 / (2 * total)) / (1 + z2 / total)
    half = z * math.sqrt(share * (1 - share) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    # At 0 and n successes the bound is exactly 0 or 1 (the formula's rounding leaves it a hair inside or outside).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == total else min(1.0, centre + half)
    return low, high


def is_fast(
    correct: bool, eager: float | None, p: float, eager_low: float | None = None, noise_unknown: bool = False
) -> bool:
    """Whether one problem counts toward fast_p: correct, and (p > 0) a measured speed-up over eager above p
    beyond the noise: where the harness measured the speed-up's 95% interval (`eager_low`, its low end), that low
    end must be above p, so a speed-up the noise cannot tell from p does not count (KernelBench compares the point
    figure alone); a verdict from before the harness measured intervals is held to its point, and one whose noise
    is unknown (an interval missing among others: figures.noise_unknown) clears nothing, as in the goal check."""
    if not correct:
        return False
    if p <= 0:
        return True
    if eager is None or (eager_low is None and noise_unknown):
        return False
    return (eager_low if eager_low is not None else eager) > p


def fast_p(rows: list[dict], p: float) -> dict:
    """fast_p over `rows` (each {"correct": bool, "eager": float | None, "eager_low": float | None}): how many
    are fast, of how many, the share and its 95% Wilson interval (None for both when there are no rows)."""
    fast = sum(
        1
        for row in rows
        if is_fast(
            bool(row.get("correct")),
            row.get("eager"),
            p,
            eager_low=row.get("eager_low"),
            noise_unknown=bool(row.get("eager_noise_unknown")),
        )
    )
    total = len(rows)
    return {
        "p": p,
        "fast": fast,
        "of": total,
        "share": fast / total if total else None,
        "interval": wilson_interval(fast, total),
    }


def fast_p_table(rows: list[dict], thresholds: tuple[float, ...] = FAST_P) -> list[dict]:
    """fast_p at each threshold, in order."""
    return [fast_p(rows, p) for p in thresholds]


def format_fast_p(entry: dict) -> str:
    """One fast_p as the scoreboard writes it: "6/10 (60%; 95% CI 31–83%)", or "—" over no problems."""
    if not entry["of"]:
        return "—"
    low, high = entry["interval"]
    return f"{entry['fast']}/{entry['of']} ({entry['share']:.0%}; 95% CI {low:.0%}–{high:.0%})"
