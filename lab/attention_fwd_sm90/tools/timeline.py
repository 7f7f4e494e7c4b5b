"""Where does a launch of the one-tile kernel spend its time, SM by SM? Needs a build with -DKSEEK_TIMELINE
(versions/v21_timeline.cu), whose CTAs record their SM, key blocks, and start and end times (%globaltimer).
Run on the GPU machine:

    python3 lab/attention_fwd_sm90/tools/timeline.py LIB.so OUT.json B:S:H:D:causal [B:S:H:D:causal ...]

For each shape (bf16, Hkv = H, Sq = Sk = S) it warms up, clears the timeline, times one call and prints: the
launch's span, how busy the SMs were over it (the sum of CTA times over SMs x span), the SMs' idle time after
their last CTA, the gap between one CTA's end and the next one's start on an SM, and the time per key block of
the CTAs that started in the first wave against the rest. OUT.json keeps every CTA's row for later reading.
"""

import ctypes
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from kernels.load import AttentionFwd

BM = 128  # the shortest tile (WgShape::BM; d64's is 192), so the rows read cover the grid; empty rows are skipped


def read_rows(lib, rows: int) -> list[tuple[int, int, int, int]]:
    buf = (ctypes.c_ulonglong * (4 * rows))()
    rc = lib.kseek_timeline_read(buf, rows)
    if rc != 0:
        raise RuntimeError(f"kseek_timeline_read returned {rc}")
    return [tuple(buf[4 * i : 4 * i + 4]) for i in range(rows)]


def summarize(rows, sms: int) -> dict:
    done = [r for r in rows if r[0] and r[1]]
    if not done:
        return {"ctas": 0}
    t0 = min(r[0] for r in done)
    span = max(r[1] for r in done) - t0
    by_sm: dict[int, list] = {}
    for r in done:
        by_sm.setdefault(r[2], []).append(r)
    gaps, tail = [], []
    for ctas in by_sm.values():
        ctas.sort()
        gaps += [b[0] - a[1] for a, b in zip(ctas, ctas[1:])]
        tail.append(t0 + span - ctas[-1][1])
    first_wave = sorted(done)[: min(sms, len(done))]
    later = sorted(done)[len(first_wave) :]

    def per_block(rs):
        return statistics.median((r[1] - r[0]) / max(r[3], 1) for r in rs) if rs else None

    return {
        "ctas": len(done),
        "sms_used": len(by_sm),
        "span_us": span / 1e3,
        "busy": sum(r[1] - r[0] for r in done) / (sms * span),
        "tail_idle_mean": statistics.mean(tail) / span,
        "tail_idle_max": max(tail) / span,
        "gap_median_ns": statistics.median(gaps) if gaps else None,
        "gap_p90_ns": sorted(gaps)[int(0.9 * len(gaps))] if gaps else None,
        "ns_per_block_first_wave": per_block(first_wave),
        "ns_per_block_later": per_block(later),
    }


def main(lib_path: str, out_path: str, shapes: list[str]) -> None:
    kern = AttentionFwd(lib_path)
    lib = kern._lib
    lib.kseek_timeline_read.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.kseek_timeline_read.restype = ctypes.c_int
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    report = {}
    for shape in shapes:
        B, S, H, D, causal = map(int, shape.split(":"))
        q, k, v = (torch.randn((B, S, H, D), device="cuda", dtype=torch.bfloat16) for _ in range(3))
        rows = min(-(-S // BM) * H * B, 1 << 16)  # kTimelineRows
        for _ in range(3):
            kern(q, k, v, causal=bool(causal))
        read_rows(lib, rows)  # clears what the warm-up calls wrote
        kern(q, k, v, causal=bool(causal))
        cta_rows = read_rows(lib, rows)
        summary = summarize(cta_rows, sms)
        report[shape] = {"summary": summary, "rows": cta_rows}
        line = " ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in summary.items())
        print(f"{shape:>18}: {line}", flush=True)
    Path(out_path).write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
