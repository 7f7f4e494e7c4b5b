"""A field's line in task.toml, for the problems that name it: tomllib gives none, so the text is scanned."""

from __future__ import annotations

import re

_HEADER_RE = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-]+)\s*\]\]?\s*(#.*)?$")  # [name] or [[name]]


class _Lines:
    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def header(self, name: str, index: int = 0) -> int | None:
        """Line of the index-th `[name]` or `[[name]]` header."""
        pat = re.compile(r"^\s*\[\[?\s*" + re.escape(name) + r"\s*\]\]?\s*(#.*)?$")
        hits = [i + 1 for i, line in enumerate(self.lines) if pat.match(line)]
        return hits[index] if index < len(hits) else None

    def key(self, key: str, after: int | None = 0, containing: str | None = None) -> int | None:
        """First line at or after `after` that sets `key` (as `key =` or `key = ...` inline) and contains
        `containing`; `after` (the line) when not found, None without `after`. When `after` is a table's
        header, only that table (and its sub-tables) is searched: a key missing from one [[args]] table is
        not found in the next one."""
        pat = re.compile(r"(^|[\s{,])" + re.escape(key) + r"\s*=")
        start = after or 0
        table = _HEADER_RE.match(self.lines[start - 1]) if 0 < start <= len(self.lines) else None
        for i in range(max(0, start - 1), len(self.lines)):
            line = self.lines[i]
            if table and i >= start and (other := _HEADER_RE.match(line)):
                if not other.group(1).startswith(table.group(1) + "."):
                    break
            if pat.search(line.split("#", 1)[0]) and (containing is None or containing in line):
                return i + 1
        return after or None

    def containing(self, text: str, after: int | None = 0) -> int | None:
        for i in range(max(0, (after or 0) - 1), len(self.lines)):
            if text in self.lines[i]:
                return i + 1
        return after or None
