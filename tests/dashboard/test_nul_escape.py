"""The NUL escape of stored payloads (runs/nul_escape.py) gives back exactly what was sent, for any JSON payload:
strings holding NUL characters, "␀" symbols of their own, keys that need escaping in a JSON pointer, nested lists."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from runs.nul_escape import KEY, escape_nul, unescape_nul

TEXT = st.text(alphabet=st.sampled_from(["a", "\x00", "\u2400", "/", "~", "é"]), max_size=12)
KEYS = st.text(alphabet=st.sampled_from(["k", "/", "~", "0", "1"]), min_size=1, max_size=4).filter(lambda k: k != KEY)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(payload=st.dictionaries(KEYS, JSON, max_size=5))
def test_an_escaped_payload_holds_no_nul_and_gives_back_exactly_what_was_sent(payload):
    escaped = escape_nul(payload)
    assert "\\u0000" not in json.dumps(escaped)
    assert unescape_nul(escaped) == payload
    assert (KEY in escaped) is ("\\u0000" in json.dumps(payload))


def test_a_payload_without_nul_is_left_as_it_is():
    payload = {"text": "a \u2400 of its own", "n": [1, {"x": "y"}]}
    assert escape_nul(payload) is payload and unescape_nul(payload) is payload
