"""The editor tool's memory is bounded, as the shell's is (issue 34, item 28: on 62245a7 a `view` of a 500 MB file
took the agent to 2.1 GB): a file over the editor's limit is refused wherever the editor would read it whole, with
the limit named and what to do instead, and a part of it is viewed by streaming the file, keeping only what is
shown. The file is sparse (it costs no disk), and the tool runs in a child process whose peak memory (VmHWM) is
read before and after: a functional bound, not a timing."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.tools import ToolInputError
from agentloop.tools.editor import EditorTool

ROOT = Path(__file__).resolve().parents[2]
SIZE = 500_000_000
LIMIT = 10000  # the editor's default output limit

CALLS = {
    "view": {"command": "view", "path": "huge.txt"},
    "str_replace": {"command": "str_replace", "path": "huge.txt", "old_str": "line one", "new_str": "line 1"},
    "insert": {"command": "insert", "path": "huge.txt", "insert_line": 0, "insert_text": "top"},
    "head": {"command": "view", "path": "huge.txt", "view_range": [1, 2]},
    "rest": {"command": "view", "path": "huge.txt", "view_range": [3, -1]},
}

PEAK = """
import json, sys
from pathlib import Path
from agentloop.tools import ToolInputError
from agentloop.tools.editor import EditorTool

def peak_kb():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1])

editor = EditorTool(Path(sys.argv[1]))
calls = json.loads(sys.argv[2])
before = peak_kb()
answers = {}
for name, call in calls.items():
    try:
        result = editor(call)
        answers[name] = {"output": result.output, "cut": result.truncated_chars}
    except ToolInputError as refused:
        answers[name] = {"refused": str(refused)}
print(json.dumps({"grew_kb": peak_kb() - before, "answers": answers}))
"""


@pytest.fixture
def huge_file(tmp_path):
    """500 MB: two short lines, then a line of 500 MB of NUL bytes (a hole: no disk), then "the end"."""
    path = tmp_path / "huge.txt"
    with open(path, "wb") as f:
        f.write(b"line one\nline two\n")
        f.seek(SIZE - len(b"\nthe end\n"))
        f.write(b"\nthe end\n")
    assert path.stat().st_size == SIZE
    return path


def test_a_500_mb_file_is_refused_where_the_editor_reads_whole_and_viewed_in_parts_in_bounded_memory(huge_file):
    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(huge_file.parent), json.dumps(CALLS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    answers = seen["answers"]
    for name in ("view", "str_replace", "insert"):
        refused = answers[name].get("refused", "")
        assert f"huge.txt is {SIZE:,} bytes, over the editor's limit of {4 * 1024 * 1024:,} bytes" in refused, name
    assert "view_range" in answers["view"]["refused"] and "sed" in answers["str_replace"]["refused"]
    assert huge_file.stat().st_size == SIZE and huge_file.read_bytes()[:9] == b"line one\n"  # left as it was
    assert answers["head"] == {"output": "     1\tline one\n     2\tline two", "cut": 0}
    # The middle of the 500 MB line is cut and counted, as the shell cuts long output.
    rest = answers["rest"]
    assert rest["output"].startswith("     3\t\x00") and rest["output"].endswith("\n     4\tthe end\n     5\t")
    assert rest["cut"] > SIZE - 2 * LIMIT and f"[... {rest['cut']} characters cut" in rest["output"]
    # Reading the file whole held it several times over; now what is kept is bounded by the output limit.
    assert seen["grew_kb"] < 64 * 1024, seen["grew_kb"]


def test_a_part_of_a_large_file_is_viewed_with_the_line_numbers_of_the_whole_and_a_range_past_its_end_refused(
    tmp_path,
):
    # The streamed view agrees with the whole-file view, line numbers and a missing last line included.
    lines = [f"line {n}" for n in range(1, 2001)]
    (tmp_path / "k.cpp").write_text("\n".join(lines))
    whole = EditorTool(tmp_path)
    streamed = EditorTool(tmp_path, max_file_bytes=100)
    for view_range in ([1, 3], [1998, -1], [700, 705], [2000, 2000]):
        call = {"command": "view", "path": "k.cpp", "view_range": view_range}
        assert streamed(call).output == whole(call).output, view_range
    for view_range in ([1999, 2001], [0, 3], [5, 4]):
        with pytest.raises(ToolInputError, match="view_range"):
            streamed({"command": "view", "path": "k.cpp", "view_range": view_range})
