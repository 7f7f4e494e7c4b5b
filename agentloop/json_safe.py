"""What a JSON value must be to be written and sent: strict JSON (RFC 8259: no NaN or Infinity) of text that UTF-8
can hold (no lone surrogate). Python's json reads both from a model's reply or a harness's line, and then cannot
send the first back to the Messages API nor write the second to the trace (hostile-model audit, finding 8).
"""

from __future__ import annotations

import math
import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a string decoded from JSON holds only unpaired ones


def holds_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a lone surrogate, which no UTF-8 text (and so no database or page) can carry."""
    return _LONE_SURROGATE.search(text) is not None


def clean_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, as a UTF-8 decoder replaces a bad byte."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def nests_deeper(value: Any, levels: int) -> bool:
    """Whether a parsed JSON value nests objects and arrays more than `levels` deep (an object or array is level 1,
    a scalar level 0), walked with a stack of its own, not recursion, so any depth the JSON reader took is measured.
    The one measure of nesting: the agent's of a tool input, the server's and the trace import's of an event."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)):
            continue
        if depth > levels:
            return True
        stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def json_safe(value: Any) -> Any:
    """`value` as strict JSON can carry it: lone surrogates replaced (in keys too), NaN and the infinities null.
    A value that needs nothing is returned as it is (the same object)."""
    if isinstance(value, str):
        return clean_text(value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        items = [(json_safe(k), json_safe(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list):
        cleaned = [json_safe(v) for v in value]
        return value if all(c is v for c, v in zip(cleaned, value, strict=True)) else cleaned
    return value


def non_finite(value: Any) -> bool:
    """Whether `value` holds a NaN or an infinity anywhere."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(non_finite(v) for v in value)
    return False
