"""The file editor tool: view, create, replace a unique string, insert lines. Paths stay inside the workspace.

Its memory is bounded, as the shell's is: a file is read whole (to view it all, to replace in it, to insert into
it) only up to `max_file_bytes` (4 MiB unless the policy says otherwise); over that the model is told the limit and
what to do instead. A part of a larger file is viewed by streaming it (`view_range`), keeping only what is shown.
A directory listing looks at a bounded number of entries.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from agentloop.tools import OutputKeeper, ToolInputError, ToolResult, require, truncate

MAX_FILE_BYTES = 4 * 1024 * 1024  # a kernel source is a few hundred KB at most
READ_CHUNK = 1 << 16
LISTED = 500  # entries a directory listing shows ...
LISTING_SCAN = 20 * LISTED  # ... chosen (sorted) from at most this many found
PATH_MAX = 4096  # bytes of a path (Linux's PATH_MAX) ...
NAME_MAX = 255  # ... and of one name in it (NAME_MAX): what the file system takes
_NOT_REGULAR = "{name} is not a regular file (a FIFO, a socket or a device): the editor neither reads nor writes it"

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
        """`raw` (the model's path) inside the workspace, links resolved; ToolInputError for a path the file
        system cannot take (a NUL, over PATH_MAX or NAME_MAX) or one outside the workspace."""
        problem = path_problem(raw)
        if problem is not None:
            raise ToolInputError(problem)
        try:
            path = (self.workspace / raw).resolve()
        except (OSError, RuntimeError) as exc:  # (RuntimeError: a loop of links, before Python 3.13)
            raise ToolInputError(f"{raw[:200]!r} cannot be resolved: {getattr(exc, 'strerror', None) or exc}") from None
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
        try:
            output = handler(path, tool_input)
        except OSError as exc:  # the file system's answer (not a directory, no space, ...): the model's to read
            return ToolResult(f"error: {self._name(path)}: {exc.strerror or exc}", is_error=True)
        # A streamed view comes already cut to the limit, with its count; anything else is cut here.
        shown, cut = output if isinstance(output, tuple) else truncate(output, self.output_limit)
        return ToolResult(shown, truncated_chars=cut)

    def _name(self, path: Path) -> str:
        return str(path.relative_to(self.workspace)) or "."

    def _too_large(self, path: Path) -> bool:
        return path.stat().st_size > self.max_file_bytes

    def _read(self, path: Path, instead: str) -> str:
        """The whole file, if it is a UTF-8 text file within the limit; else what to do `instead` is told."""
        with self._open(path, os.O_RDONLY) as f:
            size = os.fstat(f.fileno()).st_size
            if size > self.max_file_bytes:
                raise ToolInputError(
                    f"{self._name(path)} is {size:,} bytes, over the editor's limit of {self.max_file_bytes:,} "
                    f"bytes for a file it reads whole: {instead}"
                )
            data = f.read(self.max_file_bytes + 1)
        if len(data) > self.max_file_bytes:
            raise ToolInputError(f"{self._name(path)} grew over the editor's limit while it was read: {instead}")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolInputError(f"{self._name(path)} is not a UTF-8 text file") from None

    def _open(self, path: Path, flags: int) -> BinaryIO:
        """The regular file at `path`, opened without waiting (a FIFO opens at once, or not at all: ENXIO) and
        checked by fstat of what was opened: a FIFO, a device or a socket is never read or written."""
        try:
            fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        except FileNotFoundError:
            raise ToolInputError(f"{self._name(path)} is not a file") from None
        except IsADirectoryError:
            raise ToolInputError(f"{self._name(path)} is a directory") from None
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO with no reader, a socket
                raise ToolInputError(_NOT_REGULAR.format(name=self._name(path))) from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ToolInputError(_NOT_REGULAR.format(name=self._name(path)))
        os.set_blocking(fd, True)
        return open(fd, "rb" if flags == os.O_RDONLY else "wb", closefd=True)

    def _write(self, path: Path, text: str) -> None:
        with self._open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) as f:
            f.write(text.encode("utf-8"))

    def view(self, path: Path, tool_input: dict[str, Any]) -> str | tuple[str, int]:
        if path.is_dir():
            return self._listing(path)
        view_range = tool_input.get("view_range")
        if view_range is not None and (
            not isinstance(view_range, list) or len(view_range) != 2 or not all(isinstance(n, int) for n in view_range)
        ):
            raise ToolInputError("view_range must be [first, last] line numbers (last may be -1)")
        if view_range is not None and path.is_file() and self._too_large(path):
            return self._view_streamed(path, view_range)  # (opened as _open opens: a regular file, checked)
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
        with self._open(path, os.O_RDONLY) as f:
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
        existed = path.exists()
        if existed and not path.is_file():
            raise ToolInputError(_NOT_REGULAR.format(name=self._name(path)))
        path.parent.mkdir(parents=True, exist_ok=True)
        self._write(path, text)
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
        self._write(path, text.replace(old, new, 1))
        return f"Replaced 1 occurrence in {self._name(path)} at line {start_line}."

    def insert(self, path: Path, tool_input: dict[str, Any]) -> str:
        line = require(tool_input, "insert_line", int)
        new = require(tool_input, "insert_text")
        lines = self._read(path, "edit it with the shell (sed -i, or a script that streams it)").split("\n")
        if not 0 <= line <= len(lines):
            raise ToolInputError(f"insert_line {line} is outside 0..{len(lines)}")
        added = new.split("\n")
        self._write(path, "\n".join(lines[:line] + added + lines[line:]))
        return f"Inserted {len(added)} line(s) after line {line} of {self._name(path)}."


def path_problem(raw: str) -> str | None:
    """Why the model's path `raw` cannot be a path of the file system, in words it reads; None when it can."""
    if "\0" in raw:
        return "a path may not contain a NUL character"
    size = len(raw.encode("utf-8", errors="surrogatepass"))
    if size > PATH_MAX:
        return f"the path is {size:,} bytes, over the limit of {PATH_MAX:,} bytes (PATH_MAX)"
    longest = max((len(part.encode("utf-8", errors="surrogatepass")) for part in raw.split("/")), default=0)
    if longest > NAME_MAX:
        return f"a name in the path is {longest:,} bytes, over the limit of {NAME_MAX} bytes (NAME_MAX)"
    return None
