"""Sums Nsight Compute's per-instruction stall samples (profile_stalls.sh's `*_sass.csv`, plain or .gz) by
instruction class and by stall reason, the tables the `results/ncu_stalls_*.md` notes give:

python3 lab/attention_fwd_sm90/tools/stall_classes.py FILE.csv[.gz] ...

Each file prints its kernel, then each class's share of the stall samples and, in brackets, of the executed
instructions, then the reasons' shares. The classes are the notes' (v9's, v12a's, v18's profiles).
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
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


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


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in paths:
        print(summarize(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
