"""Refuse a question key the bank does not have, before a device call writes it into a trace. The device scripts put
"; question KEY" at the end of every evaluation's note (QUESTION=KEY), and the dashboard shows the bank question
of each key a note names; a key that is not in questionbank/bank.toml shows nothing and says nothing, so a typo
would pass for a question that was asked. From the repository root, anywhere (no GPU, no Django):

    python3 lab/tools/bank_key.py KEY [KEY ...]        each KEY must be a bank key
    python3 lab/tools/bank_key.py --note "TEXT"         each word after "question" in TEXT must be one

Exit 0 when every key is the bank's; 2, with one line a key naming the closest keys, when one is not.
"""

import argparse
import difflib
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: questionbank

from questionbank.bank import load_bank

# "question KEY" in a note, as the device scripts write it ("...; question layer-memory-byte-journey")
_QUESTION_IN_NOTE = re.compile(r"\bquestion\s+([A-Za-z0-9_-]+)")


def keys_in_note(note: str) -> list[str]:
    """The words a note names as its questions (those after the word "question"), each once, in order."""
    return list(dict.fromkeys(_QUESTION_IN_NOTE.findall(note)))


def unknown_keys(keys: list[str], bank_keys: list[str]) -> list[str]:
    """One line for each of `keys` that is not in `bank_keys`, naming up to three close ones."""
    problems = []
    for key in keys:
        if key in bank_keys:
            continue
        close = difflib.get_close_matches(key, bank_keys, n=3, cutoff=0.5)
        hint = f" (closest: {', '.join(close)})" if close else ""
        problems.append(f"{key!r} is not a key of questionbank/bank.toml{hint}")
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("keys", nargs="*", help="bank keys")
    parser.add_argument("--note", help="an evaluation's note: the words after 'question' are checked")
    args = parser.parse_args(argv)
    keys = list(args.keys) + (keys_in_note(args.note) if args.note else [])
    problems = unknown_keys(keys, [entry.key for entry in load_bank()])
    for line in problems:
        print(f"bank_key: {line}", file=sys.stderr)
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
