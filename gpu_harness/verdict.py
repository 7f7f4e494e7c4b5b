"""The verdict logic: pure functions over numbers, so that they are testable without a GPU.

A task reduces each output to a `Comparison` (computed with numpy on the CPU or torch on the GPU), and
`judge_outputs` turns comparisons and tolerances into a yes/no with a reason. Timing figures go through
`timing_suspicion`, which says why a measurement cannot be trusted, or None.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .figures import geometric_mean

if TYPE_CHECKING:
    from numpy.typing import NDArray


@dataclass(frozen=True)
class Comparison:
    """One output tensor against its reference."""

    name: str
    rel_error: float  # ||cand - ref|| / ||ref|| over the elements where the reference is finite
    bad_nonfinite: int  # NaN/Inf where the reference is finite (poison left = element never written)
    mismatched_special: int  # where the reference is +-inf/NaN (e.g. LSE = -inf), elements that differ
    count: int
    # An integer output (an index, a count, a mask) is judged exactly, element by element: an argmax with 8 of
    # its indices off by one has a relative L2 error of 6.6e-6 (KernelBench level 1 #51, H200), under any float
    # bound. `exact` marks such a comparison; `differing` counts the elements that are not the reference's, and
    # `first_difference` says where the first one is and what it holds.
    exact: bool = False
    differing: int = 0
    first_difference: str = ""


INTEGER_KINDS = "iub"  # numpy's kinds of signed, unsigned and bool arrays


def compare_numpy(name: str, cand: NDArray[Any], ref: NDArray[Any]) -> Comparison:
    """Compare with numpy in float64 (the CPU task; small arrays); integer outputs exactly."""
    import numpy as np

    c0, r0 = np.asarray(cand), np.asarray(ref)
    c = c0.astype(np.float64)
    r = r0.astype(np.float64)
    if c.shape != r.shape:
        raise ValueError(f"{name}: shape {c.shape} != reference {r.shape}")
    if c0.dtype.kind in INTEGER_KINDS or r0.dtype.kind in INTEGER_KINDS:
        return _exact_numpy(name, c0, r0, _ratio(float(np.linalg.norm(c - r)), float(np.linalg.norm(r))))
    fin = np.isfinite(r)
    cf = c[fin]
    bad = int(np.count_nonzero(~np.isfinite(cf)))
    special = int(np.count_nonzero(~(c[~fin] == r[~fin]) & ~(np.isnan(c[~fin]) & np.isnan(r[~fin]))))
    good = np.isfinite(cf)
    rf = r[fin]
    den = float(np.sqrt(np.sum(rf[good] ** 2)))
    num = float(np.sqrt(np.sum((cf[good] - rf[good]) ** 2)))
    return Comparison(name, _ratio(num, den), bad, special, int(c.size))


def _exact_numpy(name: str, cand: NDArray[Any], ref: NDArray[Any], rel_error: float) -> Comparison:
    """An integer output against its reference, element by element (compared in their own dtypes: no float64
    rounding of large int64 values). The relative error is kept for the record only."""
    import numpy as np

    differ = np.asarray(cand != ref)
    flat = np.flatnonzero(differ)
    first = ""
    if flat.size:
        at = tuple(int(i) for i in np.unravel_index(int(flat[0]), differ.shape))
        first = difference_text(at, cand[at].item(), ref[at].item())
    return Comparison(
        name, rel_error, 0, 0, int(differ.size), exact=True, differing=int(flat.size), first_difference=first
    )


def difference_text(index: tuple[Any, ...], got: object, expected: object) -> str:
    """Where an integer output first differs: `index (3, 17): 5, the reference 4`."""
    return f"index ({', '.join(str(i) for i in index)}): {got}, the reference {expected}"


def _ratio(num: float, den: float) -> float:
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def judge_outputs(comparisons: list[Comparison], tolerances: dict[str, float]) -> tuple[bool, str | None]:
    """True when every output is fully written, finite where the reference is, and within tolerance; an integer
    output (`exact`) equal to the reference everywhere."""
    for c in comparisons:
        if c.bad_nonfinite:
            return False, (
                f"{c.name}: {c.bad_nonfinite} of {c.count} elements are NaN/Inf where the reference is "
                f"finite (unwritten output keeps the NaN poison)"
            )
        if c.mismatched_special:
            return False, f"{c.name}: {c.mismatched_special} elements differ where the reference is -inf/inf/NaN"
        if c.exact:
            if c.differing:
                return False, (
                    f"{c.name}: {c.differing} elements differ from the reference (an integer output is judged"
                    f" exactly, element by element); the first at {c.first_difference}"
                )
            continue  # equal everywhere: no tolerance applies, whatever the rule says
        tol = tolerances[c.name]
        if not (c.rel_error <= tol):
            return False, f"{c.name}: relative error {c.rel_error:.3e} above tolerance {tol:.3e}"
    return True, None


ErrorAndBound = tuple[float | None, float | None]


def _past_bound(error: float | None, bound: float | None) -> float:
    """How far along its bound an error is (1.0: at it); -inf where nothing was measured, inf where the bound is
    none or zero and the error is not, or the error is NaN."""
    if error is None:
        return -math.inf
    if math.isnan(error) or (not bound and error > 0):
        return math.inf
    return error / bound if bound else 0.0


def nearer_bound(kept: ErrorAndBound, judged: ErrorAndBound) -> ErrorAndBound:
    """Of two judged runs' (error, bound) pairs, the one nearer its bound (the one past it, where one is): the
    pair a scenario shows. A rule measured on each run bounds each seed by the baseline's error on that seed's
    inputs, so the largest error and the last bound may belong to different runs, and a scenario that passed
    both would read "error 8.9e-04, tolerance 6.2e-04". `kept` (None, None): nothing judged yet."""
    if kept[1] is None or _past_bound(*judged) >= _past_bound(*kept):
        return judged
    return kept


def tolerance_from_vendor(vendor_error: float | None, default_error: float, floor: float) -> float:
    """'At most twice the vendor library's error on the same inputs, plus a small floor'."""
    base = vendor_error if (vendor_error is not None and math.isfinite(vendor_error)) else default_error
    return 2.0 * base + floor


# ---- timing ---------------------------------------------------------------------------------------------


def median_and_spread(samples: list[float]) -> tuple[float, float]:
    """Median and interquartile range (robust to the odd slow call)."""
    xs = sorted(samples)
    if not xs:
        raise ValueError("no samples")
    med = statistics.median(xs)
    if len(xs) < 4:
        return med, xs[-1] - xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return med, q[2] - q[0]


def median_calls(samples: list[float]) -> list[int]:
    """The positions in `samples` of the calls whose times make its median (median_and_spread's): the middle one
    of an odd count, the two middle ones of an even count (ties broken by position, as a stable sort keeps them)."""
    if not samples:
        raise ValueError("no samples")
    order = sorted(range(len(samples)), key=lambda i: samples[i])
    middle = len(order) // 2
    return sorted(order[middle - 1 : middle + 1] if len(order) % 2 == 0 else [order[middle]])


def median_interval(samples: list[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval on the median of `samples`: the order statistics x(k) and x(n+1-k) with the
    largest k whose binomial coverage, 1 - 2 P(Binomial(n, 1/2) < k), is still at least `level`. Timings are
    skewed (the odd slow call) and few (3 to 15), so no normal approximation: this holds for any distribution of
    independent calls. Below 6 samples no k reaches 95% and the interval is the whole range, [min, max] (75% at
    3 samples, 94% at 5): few samples give a wide interval, never a falsely narrow one."""
    xs = sorted(samples)
    n = len(xs)
    if not n:
        raise ValueError("no samples")
    k, below = 1, 0.0  # below: P(Binomial(n, 1/2) <= j), accumulated term by term; k = j + 1 while it holds
    for j in range(n // 2):
        below += math.comb(n, j) / 2**n
        if 1 - 2 * below < level:
            break
        k = j + 1
    k = min(k, (n + 1) // 2)
    return xs[k - 1], xs[n - k]


def adaptive_repeats(estimate_ms: float, budget_ms: float, lo: int, hi: int) -> int:
    """Enough timed calls to fill budget_ms, at least lo and at most hi: slow kernels get few."""
    if not (estimate_ms > 0):
        return hi
    return max(lo, min(hi, int(budget_ms / estimate_ms)))


def median_settled(samples: list[float], min_n: int, rel: float) -> bool:
    """True when at least min_n samples pin the median down to within `rel` of itself: the half-width of its
    approximate 95% confidence interval, 1.57 * IQR / sqrt(n) (the notch of a box plot), is at most
    rel * median. Timing stops there instead of running every repeat of its budget."""
    if len(samples) < max(min_n, 4):
        return False
    med, iqr = median_and_spread(samples)
    return med > 0 and 1.57 * iqr / math.sqrt(len(samples)) <= rel * med


@dataclass(frozen=True)
class TimingLimits:
    peak_tflops: float | None = None  # measured dense matrix rate of the device (None: not checked)
    peak_gbps: float | None = None  # measured copy bandwidth in GB/s (None: not checked)
    slack: float = 1.15  # results this much over a measured peak are suspect
    host_ratio: float = 1.30  # parent's wall clock per call may exceed the in-process median by this
    host_overhead_ms: float = 0.05  # plus this per call (Python + ctypes + launch)
    batch_latency_ms: float = 2.0  # plus this per batch (waking both processes through the pipes)


def timing_suspicion(
    time_ms: float, host_ms: float | None, flops: float, bytes_moved: float, limits: TimingLimits
) -> str | None:
    """Why a measured time cannot be believed, or None.

    - the parent's own wall clock over a batch of calls (which the candidate cannot reach) must not exceed
      the in-process timer's figure for the same calls by more than launch overhead: work left running where
      the events do not see it, or tampered timers, show up here;
    - the implied rate must stay under the measured peaks (matrix rate and memory bandwidth).
    """
    if not (time_ms > 0) or not math.isfinite(time_ms):
        return f"non-positive or non-finite time {time_ms!r} ms"
    if host_ms is not None and host_ms > limits.host_ratio * time_ms + limits.host_overhead_ms:
        return (
            f"host clock {host_ms:.4g} ms/call disagrees with the in-process timer {time_ms:.4g} ms: "
            f"work outside the timed region or a tampered timer"
        )
    if limits.peak_tflops and flops > 0:
        tflops = flops / (time_ms * 1e-3) / 1e12
        if tflops > limits.slack * limits.peak_tflops:
            return f"{tflops:.4g} TFLOP/s is above the measured peak {limits.peak_tflops:.4g} TFLOP/s"
    if limits.peak_gbps and bytes_moved > 0:
        gbps = bytes_moved / (time_ms * 1e-3) / 1e9
        if gbps > limits.slack * limits.peak_gbps:
            return f"{gbps:.4g} GB/s of compulsory traffic is above the measured bandwidth {limits.peak_gbps:.4g} GB/s"
    return None


def geomean_speedups(speedups: list[dict[str, float | None]], baselines: list[str]) -> dict[str, dict[str, Any]]:
    """Per baseline: geometric mean over the scenarios it ran, and how many those were."""
    out = {}
    for b in baselines:
        vals = [v for v in (s.get(b) for s in speedups) if v is not None and v > 0 and math.isfinite(v)]
        out[b] = {"speedup": geometric_mean(vals), "count": len(vals)}
    return out
