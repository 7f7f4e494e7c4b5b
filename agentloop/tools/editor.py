"""The file editor tool: view, create, replace a unique string, insert lines. Paths stay inside the workspace."""

from __future__ import annotations

from pathlib import Path

from agentloop.tools import ToolInputError, ToolResult, require, truncate

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

    def __init__(self, workspace: Path, output_limit: int = 10000):
        self.workspace = Path(workspace).resolve()
        self.output_limit = output_limit

    def resolve(self, raw: str) -> Path:
        path = (self.workspace / raw).resolve()
        if path != self.workspace and self.workspace not in path.parents:
            raise ToolInputError(f"{raw} is outside the workspace")
        return path

    def __call__(self, tool_input: dict) -> ToolResult:
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
        shown, cut = truncate(output, self.output_limit)
        return ToolResult(shown, truncated_chars=cut)

    def _name(self, path: Path) -> str:
        return str(path.relative_to(self.workspace)) or "."

    def _read(self, path: Path) -> str:
        if not path.is_file():
            raise ToolInputError(f"{self._name(path)} is not a file")
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolInputError(f"{self._name(path)} is not a UTF-8 text file") from None

    def view(self, path: Path, tool_input: dict) -> str:
        if path.is_dir():
            entries = sorted(p for p in path.rglob("*") if ".git" not in p.parts)[:500]
            listing = "\n".join(self._name(p) + ("/" if p.is_dir() else "") for p in entries)
            return listing or "(empty directory)"
        lines = self._read(path).split("\n")
        first, last = 1, len(lines)
        view_range = tool_input.get("view_range")
        if view_range is not None:
            if (
                not isinstance(view_range, list)
                or len(view_range) != 2
                or not all(isinstance(n, int) for n in view_range)
            ):
                raise ToolInputError("view_range must be [first, last] line numbers (last may be -1)")
            first, last = view_range[0], (len(lines) if view_range[1] == -1 else view_range[1])
            if not 1 <= first <= last <= len(lines):
                raise ToolInputError(f"view_range {view_range} is outside the file's {len(lines)} lines")
        return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(first, last + 1))

    def create(self, path: Path, tool_input: dict) -> str:
        text = require(tool_input, "file_text")
        if path.is_dir():
            raise ToolInputError(f"{self._name(path)} is a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        path.write_text(text, encoding="utf-8")
        return f"{'Replaced' if existed else 'Created'} {self._name(path)} ({len(text)} characters)."

    def str_replace(self, path: Path, tool_input: dict) -> str:
        old = require(tool_input, "old_str")
        new = tool_input.get("new_str", "")
        if not isinstance(new, str):
            raise ToolInputError("new_str must be a string")
        text = self._read(path)
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

    def insert(self, path: Path, tool_input: dict) -> str:
        line = require(tool_input, "insert_line", int)
        new = require(tool_input, "insert_text")
        lines = self._read(path).split("\n")
        if not 0 <= line <= len(lines):
            raise ToolInputError(f"insert_line {line} is outside 0..{len(lines)}")
        added = new.split("\n")
        path.write_text("\n".join(lines[:line] + added + lines[line:]), encoding="utf-8")
        return f"Inserted {len(added)} line(s) after line {line} of {self._name(path)}."
