"""The rates of a timed scenario and the roofline that says which of them leads: TFLOP/s, GB/s, their shares of
the device's measured peaks and of its maker's bandwidth, and what bounds a scenario. `gpu_harness.figures`
re-exports every name here; readers take them from there.

No Django and no torch here, and nothing else of ours: this module sits under `figures.py`.
"""

from __future__ import annotations

import math
from typing import Any


def measured(value: object) -> float | None:
    """A measured quantity: a positive finite number, else None (a verdict may come from anywhere)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def tflops(flops: object, time_ms: object) -> float | None:
    """TFLOP/s of a call of `flops` useful operations taking `time_ms` (the harness's own formula)."""
    flops, time_ms = measured(flops), measured(time_ms)
    return flops / (time_ms * 1e-3) / 1e12 if flops and time_ms else None


def gbps(nbytes: object, time_ms: object) -> float | None:
    """GB/s of compulsory traffic: `nbytes` moved by a call taking `time_ms`."""
    nbytes, time_ms = measured(nbytes), measured(time_ms)
    return nbytes / (time_ms * 1e-3) / 1e9 if nbytes and time_ms else None


def peak_share(rate: object, peak: object) -> float | None:
    """A rate as a share of the device's measured peak (1.0: at the peak; above 1.0 the figure is suspect)."""
    rate, peak = measured(rate), measured(peak)
    return rate / peak if rate and peak else None


# ---- what bounds a scenario: the roofline (issue 36) ----
#
# A scenario's arithmetic intensity is its useful operations over its compulsory bytes: the task's `flops` and
# `bytes` formulas (docs/tasks.md), for attention 4·B·Hq·Sq·avg_Sk·D over Q, K, V, O and LSE moved once. The
# device's ridge point is its matrix peak over its memory bandwidth, both as the harness measured them (`peaks`:
# a bf16 GEMM and a 1 GiB copy; about 200 FLOP a byte on an H200). The rule: a scenario whose intensity is below the
# ridge point is memory-bound. Even moving its bytes at full bandwidth it cannot reach the matrix peak, so the roof
# above it is the bandwidth: its figure is GB/s and the share of the bandwidth (attention decode, Sq = 1: about
# 1 FLOP a byte), and its TFLOP/s only follow. At or above the ridge point it is compute-bound: TFLOP/s and the share
# of the matrix peak lead. Under the roofline a memory-bound call's share of the bandwidth is its share of the roof
# it is under (intensity x bandwidth), so every scenario is measured against the roof it can reach.
# Where a count or a peak is missing (a CPU task, a verdict from before the harness measured peaks) nothing is
# bound and TFLOP/s leads, as before. A task needs nothing but its two formulas for this.
MEMORY_BOUND, COMPUTE_BOUND = "memory", "compute"

# The memory bandwidth a device's maker gives (GB/s), by the name the harness records for it (torch's device
# name): published results quote shares of it (NVIDIA's H200 figures: of 4.8 TB/s of HBM3e), while a copy on the card
# reaches less (the measured `peak_gbps`, 3.99 to 4.22 TB/s on the H200s here). Only devices whose name fixes the
# figure: an H100 PCIe or NVL has other memory than the SXM part listed.
NOMINAL_GBPS = {"NVIDIA H200": 4800.0, "NVIDIA H100 80GB HBM3": 3350.0}


def _count(value: object) -> float | None:
    """A count of operations or bytes: a non-negative finite number (a copy does no floating-point work)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def arithmetic_intensity(flops: object, nbytes: object) -> float | None:
    """Useful operations per compulsory byte, or None where either count is missing (or no byte moves)."""
    flops, nbytes = _count(flops), measured(nbytes)
    return flops / nbytes if flops is not None and nbytes else None


def ridge_point(peaks: dict[str, Any] | None) -> float | None:
    """The device's ridge point in FLOP a byte: its measured matrix peak over its measured bandwidth; None unless
    both were measured (`EvalResult.peaks`, stored in `Evaluation.verdict`)."""
    peaks = peaks if isinstance(peaks, dict) else {}
    tflops_peak, gbps_peak = measured(peaks.get("peak_tflops")), measured(peaks.get("peak_gbps"))
    return tflops_peak * 1e12 / (gbps_peak * 1e9) if tflops_peak and gbps_peak else None


def bound_by(flops: object, nbytes: object, peaks: dict[str, Any] | None) -> str | None:
    """MEMORY_BOUND where the scenario's arithmetic intensity is below the device's ridge point, COMPUTE_BOUND
    at or above it; None where either is unknown (then TFLOP/s leads, as before)."""
    intensity, ridge = arithmetic_intensity(flops, nbytes), ridge_point(peaks)
    if intensity is None or ridge is None:
        return None
    return MEMORY_BOUND if intensity < ridge else COMPUTE_BOUND


DEVICE_NAME_MAX = 80  # what a page writes of a verdict's device name (an imported one may say anything)


def device_of(verdict: object) -> str:
    """The machine a verdict says it ran on (its `device_name`: the GPU's name, or the host's for a CPU task), as
    pages write it (`device_text`). Two figures of one run may come from two cards."""
    return device_text(verdict.get("device_name") if isinstance(verdict, dict) else None)


def device_text(device_name: object) -> str:
    """A verdict's `device_name` as pages write it: at most DEVICE_NAME_MAX characters; "" for none, or for
    anything but a string (a page that reads the field alone, without the verdict, uses this)."""
    return device_name.strip()[:DEVICE_NAME_MAX] if isinstance(device_name, str) else ""


def nominal_gbps(device_name: object) -> float | None:
    """The maker's memory bandwidth of the named device (NOMINAL_GBPS), or None where it is not listed."""
    return NOMINAL_GBPS.get(device_name) if isinstance(device_name, str) else None


def scenario_rates(
    flops: object, nbytes: object, time_ms: object, peaks: dict[str, Any] | None, device_name: str = ""
) -> dict[str, Any]:
    """Every rate of one timed scenario and what bounds it: {"bound" (MEMORY_BOUND, COMPUTE_BOUND or None),
    "tflops", "tflops_share" (of the measured matrix peak), "gbps", "gbps_share" (of the measured bandwidth),
    "nominal_gbps" and "gbps_nominal_share" (of the maker's bandwidth, where the device is listed)}; None for each
    figure it cannot have."""
    peaks = peaks if isinstance(peaks, dict) else {}
    rate_tflops, rate_gbps, nominal = tflops(flops, time_ms), gbps(nbytes, time_ms), nominal_gbps(device_name)
    return {
        "bound": bound_by(flops, nbytes, peaks),
        "tflops": rate_tflops,
        "tflops_share": peak_share(rate_tflops, peaks.get("peak_tflops")),
        "gbps": rate_gbps,
        "gbps_share": peak_share(rate_gbps, peaks.get("peak_gbps")),
        "nominal_gbps": nominal,
        "gbps_nominal_share": peak_share(rate_gbps, nominal),
    }


def implied_flops(rate_tflops: object, time_ms: object) -> float | None:
    """The operations a verdict's own TFLOP/s and time imply: a scenario's count where its task's is not at hand."""
    rate_tflops, time_ms = _count(rate_tflops), measured(time_ms)
    return rate_tflops * time_ms * 1e9 if rate_tflops is not None and time_ms else None


def lead_rate(rates: dict[str, Any]) -> tuple[float | None, str, float | None]:
    """The figure a scenario leads with (`scenario_rates`'s dict): (GB/s, "GB/s", its share of the measured
    bandwidth) where it is memory-bound, else (TFLOP/s, "TFLOP/s", its share of the measured matrix peak)."""
    if rates.get("bound") == MEMORY_BOUND:
        return rates.get("gbps"), "GB/s", rates.get("gbps_share")
    return rates.get("tflops"), "TFLOP/s", rates.get("tflops_share")


def other_rate(rates: dict[str, Any]) -> tuple[float | None, str, float | None]:
    """The figure that follows the lead one (`lead_rate`): TFLOP/s after GB/s, GB/s after TFLOP/s."""
    if rates.get("bound") == MEMORY_BOUND:
        return rates.get("tflops"), "TFLOP/s", rates.get("tflops_share")
    return rates.get("gbps"), "GB/s", rates.get("gbps_share")
