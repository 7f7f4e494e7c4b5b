"""Which order of causal tiles keeps the SMs busy to the end of a launch? A model of the block scheduler, fitted
to a timeline that tools/timeline.py wrote (a KSEEK_TIMELINE build's rows, one per CTA). Runs anywhere:

    python3 lab/attention_fwd_sm90/tools/schedule_sim.py TIMELINE.json[.gz] [SECTION ...]

For each causal shape in the file it fits each CTA's time as a fixed cost plus a cost per key block (least
squares over the measured CTAs), then deals the grid's tiles to the SMs as the hardware does, each SM taking the
next CTA in the order of their linear index when its last one ends, and prints the fraction of the span the SMs
would be busy, for the measured order and for sections of SECTION (batch, head) pairs (longest tiles first
within each; default 1 2 4 8 and all). The model knows nothing of L2: it predicts the balance of an order, not
what sharing K and V costs (versions/README.md, v20 to v22).
"""

import gzip
import heapq
import json
import sys

BN = {64: 128, 96: 128, 128: 128, 192: 96, 256: 64}  # keys per block (WgShape::BN)
BM = {64: 192, 96: 128, 128: 128, 192: 128, 256: 128}  # query rows per CTA (WgShape::BM)
GAP_NS = 500  # between one CTA's end and the next one's start on an SM (timeline, H200: 450 to 580 ns)


def busy_fraction(durations: list[float], sms: int, gap_ns: float = GAP_NS) -> float:
    """Deal CTAs of these durations, in this order, to the first free SM; the SMs' busy share of the span."""
    free = [(0.0, sm) for sm in range(sms)]
    end = 0.0
    for d in durations:
        start, sm = heapq.heappop(free)
        heapq.heappush(free, (start + d + gap_ns, sm))
        end = max(end, start + d + gap_ns)
    return sum(durations) / (sms * end)


def section_order(nmb: int, nhb: int, section: int) -> list[tuple[int, int]]:
    """(query block, (batch, head) pair) in launch order: sections of `section` pairs, longest tiles first."""
    order = []
    for first in range(0, nhb, section):
        pairs = range(first, min(nhb, first + section))
        order += [(nmb - 1 - rank, hb) for rank in range(nmb) for hb in pairs]
    return order


def fit(rows) -> tuple[float, float]:
    """Least-squares fixed cost and cost per key block of the CTAs that ran."""
    pts = [(r[3], r[1] - r[0]) for r in rows if r[0] and r[1]]
    if len(pts) < 2:
        raise ValueError("fewer than two CTAs ran")
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        raise ValueError("every CTA had the same number of key blocks: a cost per block cannot be fitted")
    slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
    return my - slope * mx, slope


def main(path: str, sections: list[int], sms: int = 132) -> None:
    report = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    for shape, entry in report.items():
        B, S, H, D, causal = map(int, shape.split(":"))
        if not causal or not entry["summary"].get("ctas"):
            continue
        fixed, per_block = fit(entry["rows"])
        nmb, nhb = -(-S // BM[D]), H * B

        def duration(m: int) -> float:
            return fixed + per_block * -(-min(S, (m + 1) * BM[D]) // BN[D])

        cells = [f"measured {entry['summary']['busy']:.3f}"]
        for section in sections or [1, 2, 4, 8, nhb]:
            order = section_order(nmb, nhb, min(section, nhb))
            cells.append(f"section {min(section, nhb)}: {busy_fraction([duration(m) for m, _ in order], sms):.3f}")
        print(f"{shape:>18} ({fixed:.0f} ns + {per_block:.0f} ns a block): " + "  ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1], [int(a) for a in sys.argv[2:]])
