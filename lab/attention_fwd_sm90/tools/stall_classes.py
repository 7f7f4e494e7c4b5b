"""Sums Nsight Compute's per-instruction stall samples (profile_stalls.sh's `*_sass.csv`, plain or .gz) by
instruction class and by stall reason, the tables the `results/ncu_stalls_*.md` notes give:

python3 lab/attention_fwd_sm90/tools/stall_classes.py FILE.csv[.gz] ...
python3 lab/attention_fwd_sm90/tools/stall_classes.py --opcodes A.csv[.gz] B.csv[.gz] [N]

Each file prints its kernel, then each class's share of the stall samples and, in brackets, of the executed
instructions, then the reasons' shares. The classes are the notes' (v9's, v12a's, v18's profiles).
--opcodes sets two profiles of the same shape side by side: each opcode (with its modifiers) as millions of warp
instructions executed and as stall samples, the N (default 40) most executed of both first. Absolute counts, not
shares, so that work one kernel does and the other does not stands out (v34 against FlashAttention-3's polls).
"""

import csv
import gzip
import io
import sys
from collections import Counter

CLASSES = [  # (class, opcodes that start with one of these), first match wins
    ("softmax FP (FFMA, FADD, FMUL, F2FP, SHFL)", ("FFMA", "FADD", "FMUL", "F2FP", "SHFL")),
    ("HGMMA issue", ("HGMMA",)),
    ("WARPGROUP.DEPBAR/ARRIVE (wgmma waits)", ("WARPGROUP",)),
    ("BRA (mbarrier try_wait loops)", ("BRA",)),
    ("MUFU (exp2)", ("MUFU",)),
    ("FMNMX (row max)", ("FMNMX",)),
    ("loads/stores (LDS, STS, STG, ...)", ("LD", "ST", "UTMA", "UBLKCP")),
    ("uniform datapath", ("U", "R2UR")),
]
OTHER = "integer/other"


def opcode(source: str) -> str:
    """The instruction's opcode without its predicate and modifiers: "@P0 HGMMA.64x..." -> "HGMMA"."""
    return full_opcode(source).split(".")[0]


def full_opcode(source: str) -> str:
    """The instruction's opcode with its modifiers, without its predicate: "@P0 FFMA.FTZ R1, ..." -> "FFMA.FTZ"."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def class_of(op: str) -> str:
    for name, prefixes in CLASSES:
        if op.startswith(prefixes):
            return name
    return OTHER


def number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_rows(path: str) -> tuple[str, list[dict[str, str]]]:
    raw = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
    with raw:
        first = raw.readline()  # "Kernel Name","<name>",
        kernel = next(csv.reader(io.StringIO(first)))[1]
        return kernel, list(csv.DictReader(raw))


def summarize(path: str) -> str:
    kernel, rows = read_rows(path)
    samples, executed, reasons = Counter(), Counter(), Counter()
    for row in rows:
        cls = class_of(opcode(row.get("Source", "")))
        samples[cls] += number(row.get("Warp Stall Sampling (All Samples)", "0"))
        executed[cls] += number(row.get("Instructions Executed", "0"))
        for column, value in row.items():
            if column.startswith("stall_") and not column.endswith("(Not Issued)"):
                reasons[column[len("stall_") :]] += number(value)
    total_samples, total_executed = sum(samples.values()) or 1, sum(executed.values()) or 1
    total_reasons = sum(reasons.values()) or 1
    lines = [f"== {path}", f"kernel: {kernel[:160]}", f"stall samples: {int(total_samples)}"]
    for cls, count in samples.most_common():
        lines.append(f"  {cls}: {100 * count / total_samples:.1f}% ({100 * executed[cls] / total_executed:.1f}%)")
    top = ", ".join(f"{name} {100 * count / total_reasons:.1f}%" for name, count in reasons.most_common(6))
    lines.append(f"  reasons: {top}")
    return "\n".join(lines)


def opcode_counts(path: str) -> tuple[Counter, Counter]:
    """Warp instructions executed and stall samples per full opcode ("FFMA.FTZ", "SYNCS.PHASECHK.TRANS64.TRYWAIT")."""
    executed, samples = Counter(), Counter()
    for row in read_rows(path)[1]:
        op = full_opcode(row.get("Source", "")) or "?"
        executed[op] += number(row.get("Instructions Executed", "0"))
        samples[op] += number(row.get("Warp Stall Sampling (All Samples)", "0"))
    return executed, samples


def compare_opcodes(first: str, second: str, top: int = 40) -> str:
    (exec_a, samp_a), (exec_b, samp_b) = opcode_counts(first), opcode_counts(second)
    ops = sorted(set(exec_a) | set(exec_b), key=lambda op: -(exec_a[op] + exec_b[op]))
    lines = [f"A: {first}", f"B: {second}", f"{'opcode':34} {'A M':>8} {'B M':>8} {'A samples':>10} {'B samples':>10}"]
    for op in ops[:top]:
        lines.append(
            f"{op[:34]:34} {exec_a[op] / 1e6:8.2f} {exec_b[op] / 1e6:8.2f} {samp_a[op]:10.0f} {samp_b[op]:10.0f}"
        )
    lines.append(
        f"{'all':34} {sum(exec_a.values()) / 1e6:8.1f} {sum(exec_b.values()) / 1e6:8.1f} "
        f"{sum(samp_a.values()):10.0f} {sum(samp_b.values()):10.0f}"
    )
    return "\n".join(lines)


def main(paths: list[str]) -> int:
    if paths[:1] == ["--opcodes"] and len(paths) in (3, 4):
        print(compare_opcodes(paths[1], paths[2], int(paths[3]) if len(paths) == 4 else 40))
        return 0
    if not paths or paths[0].startswith("--"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in paths:
        print(summarize(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
