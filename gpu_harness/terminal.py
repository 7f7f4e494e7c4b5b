"""Text from elsewhere, printed so that a terminal shows it and never acts on it.

The harness's and the agent's command lines print text they did not write: a kernel's compile errors (`#error`
prints its line as written), a task's or an imported problem's files, a model's words and what its commands
printed. A terminal acts on control characters: ESC's sequences clear the screen, move the cursor back over lines
already written (a fake last line, "GOAL MET"), set the window's title or, in some terminals, the clipboard; and
bidi format characters (U+202E) reorder what follows, so a line reads as another. Here each character that is not
printable, but newline and tab, is written as its Python escape (`\\x1b`, `\\u202e`): seen, not acted on.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

_KEPT = "\n\t"
# ASCII that a terminal acts on: C0 controls but tab and newline, and DEL (the fast path for ASCII text)
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _escaped(char: str) -> str:
    return ascii(char)[1:-1]  # '\x1b' -> \x1b, '\u202e' -> \u202e, '\r' -> \r


def shown(text: str) -> str:
    """`text` with every character a terminal would act on (a control or format character, or one that is not
    printable, but newline and tab) written as its escape."""
    if text.isascii():
        return _ASCII_CONTROL.sub(lambda m: _escaped(m.group()), text)
    return "".join(c if c.isprintable() or c in _KEPT else _escaped(c) for c in text)


class ShownStream:
    """A text stream that writes `shown(text)` to the stream it wraps; all else (flush, fileno, isatty, encoding)
    is that stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(shown(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def shown_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr, for the block, as ShownStreams: a command's every line (its prints, its log
    records, a traceback) reaches the terminal as text. Processes it starts write to the file descriptors, not
    through these objects: the harness's child writes to its own log, which is read back and printed here."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ShownStream(out), ShownStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
