"""The file editor tool: view, create, replace a unique string, insert lines. Paths stay inside the workspace.

Its memory is bounded, as the shell's is: a file is read whole (to view it all, to replace in it, to insert into
it) only up to `max_file_bytes` (4 MiB unless the policy says otherwise); over that the model is told the limit and
what to do instead. A part of a larger file is viewed by streaming it (`view_range`), keeping only what is shown.
A directory listing looks at a bounded number of entries.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from agentloop.tools import OutputKeeper, ToolInputError, ToolResult, require, truncate

MAX_FILE_BYTES = 4 * 1024 * 1024  # a kernel source is a few hundred KB at most
READ_CHUNK = 1 << 16
LISTED = 500  # entries a directory listing shows ...
LISTING_SCAN = 20 * LISTED  # ... chosen (sorted) from at most this many found

SCHEMA = {
    "name": "editor",
    "description": (
        "View or edit files in your workspace. Commands: `view` (a file with line numbers, or a directory "
        "listing; optional view_range [first, last]), `create` (write file_text to path, replacing any file), "
        "`str_replace` (replace old_str, which must occur exactly once, by new_str), `insert` (insert "
        "insert_text after line insert_line; 0 inserts at the top). Paths are relative to the workspace."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
            "path": {"type": "string"},
            "file_text": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "insert_line": {"type": "integer"},
            "insert_text": {"type": "string"},
            "view_range": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["command", "path"],
    },
}


class EditorTool:
    name = "editor"
    schema = SCHEMA

    def __init__(self, workspace: Path, output_limit: int = 10000, max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self.workspace = Path(workspace).resolve()
        self.output_limit = output_limit
        self.max_file_bytes = max_file_bytes

    def resolve(self, raw: str) -> Path:
        path = (self.workspace / raw).resolve()
        if path != self.workspace and self.workspace not in path.parents:
            raise ToolInputError(f"{raw} is outside the workspace")
        return path

    def __call__(self, tool_input: dict[str, Any]) -> ToolResult:
        command = require(tool_input, "command")
        path = self.resolve(require(tool_input, "path"))
        handler = {
            "view": self.view,
            "create": self.create,
            "str_replace": self.str_replace,
            "insert": self.insert,
        }.get(command)
        if handler is None:
            raise ToolInputError(f"unknown command {command!r}: use view, create, str_replace or insert")
        output = handler(path, tool_input)
        # A streamed view comes already cut to the limit, with its count; anything else is cut here.
        shown, cut = output if isinstance(output, tuple) else truncate(output, self.output_limit)
        return ToolResult(shown, truncated_chars=cut)

    def _name(self, path: Path) -> str:
        return str(path.relative_to(self.workspace)) or "."

    def _too_large(self, path: Path) -> bool:
        return path.stat().st_size > self.max_file_bytes

    def _read(self, path: Path, instead: str) -> str:
        """The whole file, if it is a UTF-8 text file within the limit; else what to do `instead` is told."""
        if not path.is_file():
            raise ToolInputError(f"{self._name(path)} is not a file")
        size = path.stat().st_size
        if size > self.max_file_bytes:
            raise ToolInputError(
                f"{self._name(path)} is {size:,} bytes, over the editor's limit of {self.max_file_bytes:,} bytes "
                f"for a file it reads whole: {instead}"
            )
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolInputError(f"{self._name(path)} is not a UTF-8 text file") from None

    def view(self, path: Path, tool_input: dict[str, Any]) -> str | tuple[str, int]:
        if path.is_dir():
            return self._listing(path)
        view_range = tool_input.get("view_range")
        if view_range is not None and (
            not isinstance(view_range, list) or len(view_range) != 2 or not all(isinstance(n, int) for n in view_range)
        ):
            raise ToolInputError("view_range must be [first, last] line numbers (last may be -1)")
        if view_range is not None and path.is_file() and self._too_large(path):
            return self._view_streamed(path, view_range)
        lines = self._read(
            path, "view a part of it with view_range [first, last], or use the shell (head, tail, sed -n, grep)"
        ).split("\n")
        first, last = 1, len(lines)
        if view_range is not None:
            first, last = view_range[0], (len(lines) if view_range[1] == -1 else view_range[1])
            if not 1 <= first <= last <= len(lines):
                raise ToolInputError(f"view_range {view_range} is outside the file's {len(lines)} lines")
        return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(first, last + 1))

    def _listing(self, path: Path) -> str:
        found = itertools.islice((p for p in path.rglob("*") if ".git" not in p.parts), LISTING_SCAN)
        entries = sorted(found)
        listing = "\n".join(self._name(p) + ("/" if p.is_dir() else "") for p in entries[:LISTED])
        if len(entries) > LISTED:
            listing += f"\n[... the first {LISTED} of more entries; list a subdirectory, or use the shell (find)]"
        return listing or "(empty directory)"

    def _view_streamed(self, path: Path, view_range: list[int]) -> tuple[str, int]:
        """Lines `view_range` of a file too large to read whole, read in chunks: only the head and the tail of what
        is shown are kept (OutputKeeper, as the shell keeps a command's output). (shown, characters cut)."""
        first, last = view_range
        if first < 1 or last != -1 and last < first:
            raise ToolInputError(f"view_range {view_range} must have 1 <= first <= last (last may be -1)")
        shown = OutputKeeper(self.output_limit)
        line, wrote_any, line_started = 1, False, False
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(READ_CHUNK), b""):
                for i, piece in enumerate(chunk.split(b"\n")):
                    if i:  # a newline ended the line before this piece
                        line, line_started = line + 1, False
                    if line >= first and (last == -1 or line <= last):
                        if not line_started:
                            shown.feed((b"\n" if wrote_any else b"") + f"{line:6}\t".encode())
                            wrote_any = line_started = True
                        shown.feed(piece)
                if last != -1 and line > last:
                    break
        if not 1 <= first <= (line if last == -1 else last) <= line:
            raise ToolInputError(f"view_range {view_range} is outside the file's {line} lines")
        return shown.result()

    def create(self, path: Path, tool_input: dict[str, Any]) -> str:
        text = require(tool_input, "file_text")
        if path.is_dir():
            raise ToolInputError(f"{self._name(path)} is a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        path.write_text(text, encoding="utf-8")
        return f"{'Replaced' if existed else 'Created'} {self._name(path)} ({len(text)} characters)."

    def str_replace(self, path: Path, tool_input: dict[str, Any]) -> str:
        old = require(tool_input, "old_str")
        new = tool_input.get("new_str", "")
        if not isinstance(new, str):
            raise ToolInputError("new_str must be a string")
        text = self._read(path, "edit it with the shell (sed -i, or a script that streams it)")
        count = text.count(old) if old else 0
        if count != 1:
            raise ToolInputError(
                f"old_str occurs {count} times in {self._name(path)}; it must occur exactly once "
                "(include more surrounding lines to make it unique)"
                if old
                else "old_str is empty"
            )
        start_line = text[: text.index(old)].count("\n") + 1
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        return f"Replaced 1 occurrence in {self._name(path)} at line {start_line}."

    def insert(self, path: Path, tool_input: dict[str, Any]) -> str:
        line = require(tool_input, "insert_line", int)
        new = require(tool_input, "insert_text")
        lines = self._read(path, "edit it with the shell (sed -i, or a script that streams it)").split("\n")
        if not 0 <= line <= len(lines):
            raise ToolInputError(f"insert_line {line} is outside 0..{len(lines)}")
        added = new.split("\n")
        path.write_text("\n".join(lines[:line] + added + lines[line:]), encoding="utf-8")
        return f"Inserted {len(added)} line(s) after line {line} of {self._name(path)}."
