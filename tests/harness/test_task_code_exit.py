"""An os._exit() in a task's reference.py is the task's error, never the judge's end (gpu_harness/tasks/
task_exit.py): `task check` and `eval` say "task error: ... ended the process ... exit code N" and give their
verdict, where they ended with the task's exit code and no word. Each runs as its own process, as a user runs it:
without the fix the os._exit would end the test's own process."""

import subprocess
import sys
from pathlib import Path

import pytest

from gpu_harness.taskscaffold import scaffold

from .conftest import needs_gxx

REPO = Path(__file__).resolve().parents[2]
SCALE_ADD = "    np.multiply(x, np.float32(scale), out=out)\n    out += y\n"


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpu_harness", *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def task_whose(tmp_path, old: str, new: str) -> Path:
    """The scaffold's cpu task with `old` replaced by `new` in its reference.py."""
    folder = scaffold("demo_op", tmp_path)
    reference = folder / "reference.py"
    text = reference.read_text()
    assert old in text, old
    reference.write_text(text.replace(old, new, 1))
    return folder


@pytest.mark.parametrize(
    "old, new, says",
    [
        ("import numpy as np\n", "import os\n\nimport numpy as np\n\nos._exit(3)\n", "reference.py ended the process at import: os._exit(3), exit code 3 (reference.py, line 7)"),
        ("    return x * scale + y\n", "    import os\n\n    os._exit(3)\n", "the reference ended the process on rows=1, cols=1, scale=2.0: os._exit(3), exit code 3 (reference.py, line 11)"),
        (SCALE_ADD, "    from posix import _exit\n\n    _exit(4)\n", "baseline numpy ended the process on rows=1, cols=1, scale=2.0: os._exit(4), exit code 4 (reference.py, line 16)"),
    ],
)  # fmt: skip
def test_task_check_says_a_reference_py_that_calls_os_exit_is_the_tasks_error(tmp_path, old, new, says):
    folder = task_whose(tmp_path, old, new)
    done = cli("task", "check", str(folder))
    assert done.returncode == 2, (done.stdout, done.stderr)
    said = done.stdout + done.stderr
    assert "NOT a valid task: task error: " in said and says in said, said
    assert "Traceback" not in said


@needs_gxx
def test_eval_gives_its_verdict_when_the_reference_calls_os_exit_naming_the_task_not_the_candidate(tmp_path):
    folder = task_whose(tmp_path, "    return x * scale + y\n", "    import os\n\n    os._exit(3)\n")
    done = cli("eval", str(folder), str(folder / "kernel.cpp"))
    last = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert last.startswith("demo_op: ERROR | task error: the reference ended the process on ")
    assert "os._exit(3), exit code 3 (reference.py, line 11)" in last


EXITS = {
    # a process the task code forked ends with its own os._exit (its pid is not the judge's)
    "forked": """
with task_code():
    child = os.fork()
    if child == 0:
        try:
            os._exit(7)
        finally:  # a raise in its place would unwind the judge's own code in the forked process
            print("unwound", flush=True)
    os._exit(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
""",
    # another thread of the judge's, while the judge's thread runs task code
    "thread": """
with task_code():
    other = threading.Thread(target=os._exit, args=(7,))
    other.start()
    other.join()
""",
    "outside": """
with task_code():
    pass
os._exit(7)
""",
}


@pytest.mark.parametrize("where", EXITS)
def test_os_exit_outside_the_judges_thread_running_task_code_is_the_real_one(where):
    script = "import os, threading\nfrom gpu_harness.tasks.task_exit import task_code\n" + EXITS[where]
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (7, ""), done.stderr
