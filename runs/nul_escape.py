"""How a NUL character of an event's payload is stored: PostgreSQL cannot hold one in a JSON or text value (its
jsonb refuses the `\\u0000` escape), yet a shell's output may well hold one (`printf 'a\\000b'`, a binary file).

The event parser (runs/event_parser.py) escapes every payload this way, whatever the database, so both store and
show the same thing (docs/protocol.md 1.1):

- each NUL (U+0000) of a string value becomes U+2400, "␀" (SYMBOL FOR NULL): what the pages show in its place;
- the payload gains one key, `escaped_nul`: {JSON pointer (RFC 6901) of each string that held NUL characters:
  [[start, count], …] the runs of them, in characters}, so that the original is given back exactly
  (`unescape_nul`: a trace's export and a fork's parent events), a "␀" that was one in the original included.

A payload without NUL is left as it is (and without the key). A NUL in a payload's key, which no sender of ours
writes, is refused, as is a payload that holds NUL characters and an `escaped_nul` of its own. Pure: no Django.
"""

from __future__ import annotations

NUL = "\x00"
SHOWN = "\u2400"
KEY = "escaped_nul"


class NulRefused(ValueError):
    """A payload whose NUL characters cannot be escaped (a key holds one, or it carries its own `escaped_nul`)."""


def escape_nul(payload: dict) -> dict:
    """`payload` itself when none of its strings holds NUL; else an escaped copy."""
    found: dict[str, list[list[int]]] = {}
    escaped = _escape(payload, "", found)
    if not found:
        return payload
    if KEY in payload:
        raise NulRefused(f"payload holds NUL characters and a `{KEY}` of its own")
    escaped[KEY] = found
    return escaped


def _escape(value, pointer: str, found: dict):
    if isinstance(value, str):
        if NUL not in value:
            return value
        found[pointer] = _runs(value)
        return value.replace(NUL, SHOWN)
    if isinstance(value, dict):
        if any(NUL in key for key in value):
            raise NulRefused("a payload key holds a NUL character")
        return {key: _escape(item, f"{pointer}/{_token(key)}", found) for key, item in value.items()}
    if isinstance(value, list):
        return [_escape(item, f"{pointer}/{i}", found) for i, item in enumerate(value)]
    return value


def _runs(text: str) -> list[list[int]]:
    """[[start, count], …] of the NUL characters of `text`."""
    runs: list[list[int]] = []
    start = text.find(NUL)
    while start != -1:
        end = start
        while end < len(text) and text[end] == NUL:
            end += 1
        runs.append([start, end - start])
        start = text.find(NUL, end)
    return runs


def _token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def unescape_nul(payload):
    """The payload as it was sent: each escaped run put back to NUL characters, `escaped_nul` dropped. A payload
    without the key, or an entry that does not match its string, is given back as it is."""
    if not isinstance(payload, dict) or not isinstance(payload.get(KEY), dict):
        return payload
    original = {key: value for key, value in payload.items() if key != KEY}
    for pointer, runs in payload[KEY].items():
        original = _put_back(original, pointer, runs)
    return original


def _put_back(payload: dict, pointer, runs):
    """`payload` with the string at `pointer` given its NUL characters back (a copy along the path)."""
    if not isinstance(pointer, str) or not pointer.startswith("/") or not isinstance(runs, list):
        return payload
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
    return _replace_at(payload, tokens, runs)


def _replace_at(value, tokens: list[str], runs: list):
    if not tokens:
        return _restored(value, runs) if isinstance(value, str) else value
    head, rest = tokens[0], tokens[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _replace_at(value[head], rest, runs)}
    if isinstance(value, list) and head.isdigit() and int(head) < len(value):
        index = int(head)
        return [*value[:index], _replace_at(value[index], rest, runs), *value[index + 1 :]]
    return value


def _restored(text: str, runs: list) -> str:
    chars = list(text)
    for run in runs:
        if not (isinstance(run, list) and len(run) == 2 and all(isinstance(n, int) for n in run)):
            continue
        start, count = run
        if start >= 0 and count > 0 and "".join(chars[start : start + count]) == SHOWN * count:
            chars[start : start + count] = NUL * count
    return "".join(chars)
