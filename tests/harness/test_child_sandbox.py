"""The candidate's process in a sandbox of its own (gpu_harness/childbox.py). An outside test found that a kernel
of allowlisted imports can call `system` through `printf`'s address plus a constant of the host's libc, and
with it rewrite the build cache, kill the judging parent and leave a process running. Here that kernel runs
against the CPU task: contained, it writes nothing, signals nothing outside, leaves nothing behind, and its
verdict says where it ran."""

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpu_harness import childbox, evaluate
from gpu_harness.build import cache_dir
from gpu_harness.runner import CACHE_FOLDERS, ChildSession

from .conftest import needs_gxx

pytestmark = [needs_gxx, pytest.mark.sandbox]
NAIVE = (Path(__file__).resolve().parents[2] / "tasks" / "matmul_cpu" / "naive.cpp").read_text()
SCENARIOS = ["m7_n13_k5"]
LEFTOVER = "987.654"  # the argument of the `sleep` the kernel leaves running: found by it afterwards


def _system_offset() -> int:
    """`system`'s address less `printf`'s in this host's libc (the candidate's process loads the same one)."""
    libc = ctypes.CDLL(None)
    address = ctypes.cast
    return address(libc.system, ctypes.c_void_p).value - address(libc.printf, ctypes.c_void_p).value


def escaping_kernel(command: str) -> str:
    """The naive kernel that first runs `command` through `system`, which it never imports."""
    quoted = command.replace("\\", "\\\\").replace('"', '\\"')
    escape = f"""#include <cstdio>
typedef int (*run_fn)(const char*);
static int ran = 0;
static void escape() {{
    if (ran++) return;
    run_fn run = (run_fn)((const char*)&printf + ({_system_offset()}L));
    run("{quoted}");
}}
"""
    body = NAIVE.replace(
        "    if (m < 0 || n < 0 || k < 0) return 1;", "    escape();\n    if (m < 0 || n < 0 || k < 0) return 1;"
    )
    assert body != NAIVE
    return escape + body


def _leftovers() -> list[str]:
    found = subprocess.run(["pgrep", "-f", f"sleep {LEFTOVER}"], capture_output=True, text=True, check=False)
    return found.stdout.split()


@pytest.fixture
def bystander():
    """A process of the same user that the kernel tries to kill (it stands in for the judging parent)."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_kernel_that_runs_commands_reaches_nothing_outside_its_sandbox(tmp_path, monkeypatch, bystander):
    cache = tmp_path / "cache"
    monkeypatch.setenv("KSEEK_CACHE_DIR", str(cache))
    marker = tmp_path / "written-by-the-kernel"
    command = (
        f"touch {marker}; touch {cache}/poisoned; kill -9 {bystander.pid}; "
        f"setsid sleep {LEFTOVER} > /dev/null 2>&1 < /dev/null &"
    )
    kernel = tmp_path / "escape.cpp"
    kernel.write_text(escaping_kernel(command))
    result = evaluate("matmul_cpu", kernel, scenarios=SCENARIOS, timeout_s=60)
    assert result.child_sandbox == childbox.BUBBLEWRAP
    assert result.status == "correct" and result.all_correct  # it computed the product; its command did nothing
    time.sleep(0.5)
    assert not marker.exists() and not (cache / "poisoned").exists()
    assert bystander.poll() is None  # not killed
    assert _leftovers() == []  # the process it started died with its sandbox


def test_outside_a_sandbox_the_same_kernel_does_reach_them(tmp_path, monkeypatch, bystander):
    """The test above can fail: without the sandbox, the kernel's command runs as the harness's user."""
    monkeypatch.setattr(childbox, "sandbox_for", lambda target: childbox.NONE)
    marker = tmp_path / "written-by-the-kernel"
    kernel = tmp_path / "escape.cpp"
    kernel.write_text(escaping_kernel(f"touch {marker}; kill -9 {bystander.pid}"))
    result = evaluate("matmul_cpu", kernel, scenarios=SCENARIOS, timeout_s=60)
    assert result.child_sandbox == childbox.NONE
    deadline = time.monotonic() + 10
    while bystander.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists() and bystander.returncode == -signal.SIGKILL


def test_a_gpu_tasks_candidate_is_contained_unless_turned_off(monkeypatch):
    monkeypatch.delenv(childbox.GPU_OPT_OUT, raising=False)
    assert childbox.sandbox_for("cuda-sm90") == childbox.BUBBLEWRAP
    assert childbox.sandbox_for("cpu") == childbox.BUBBLEWRAP
    monkeypatch.setenv(childbox.GPU_OPT_OUT, "0")
    assert childbox.sandbox_for("cuda-sm90") == childbox.NONE
    assert childbox.sandbox_for("cpu") == childbox.BUBBLEWRAP  # a CPU task's child is contained whatever it says
    argv = childbox.contained(["true"], "/")
    assert os.path.basename(argv[0]) == "bwrap" and argv[-2:] == ["--", "true"]


def _environment_of(pid: int) -> dict[str, str]:
    """The process's environment once its exec has set it up: Popen returns when the exec closes the error pipe,
    which the kernel does before it places the new environment, so a read at once may find it empty (CI did)."""
    deadline = time.monotonic() + 10
    while True:
        entries = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
        environment = dict(entry.split("=", 1) for entry in entries if "=" in entry)
        if environment or time.monotonic() > deadline:
            return environment
        time.sleep(0.05)


def test_a_contained_childs_home_and_temporary_files_are_in_its_scratch_folder(monkeypatch):
    """Libraries the baselines load keep caches under TMPDIR and HOME (torch.compile's, Triton's): a contained
    child's are in its scratch folder, which it may write and which dies with the evaluation, so no cache it could
    poison outlives it; an uncontained child keeps the harness's own. A cache folder the harness's process names
    in its environment (torch.compile sets TORCHINDUCTOR_CACHE_DIR there once it has compiled) is not inherited:
    on a GPU, every torch.compile baseline of a contained child failed on the read-only /tmp it named. Nor is the
    `{cache}` of a task's [child.env] the harness's cache folder there: flash-attn-4, pointed at its read-only
    subfolder, did not import in a contained child (an H100, 2026-12-07)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_harness")
    task_env = {"LIB_CACHE_DIR": "{cache}/lib"}  # a task's [child.env] naming its library's cache under {cache}
    contained = ChildSession("matmul_cpu", task_env, sandbox=childbox.BUBBLEWRAP)
    plain = ChildSession("matmul_cpu", task_env, sandbox=childbox.NONE)
    try:
        env = _environment_of(contained.proc.pid)
        for var, folder in (("HOME", "home"), ("TMPDIR", "tmp"), ("LIB_CACHE_DIR", "cache/lib")):
            assert env[var] == os.path.join(contained.workdir, folder)
        assert os.path.isdir(env["HOME"]) and os.path.isdir(os.path.dirname(env["LIB_CACHE_DIR"]))
        for var in CACHE_FOLDERS:
            assert env[var].startswith(os.path.join(contained.workdir, "")), (var, env[var])
        plain_env = _environment_of(plain.proc.pid)
        assert plain_env.get("HOME") == os.environ.get("HOME")
        assert plain_env.get("TORCHINDUCTOR_CACHE_DIR") == "/tmp/torchinductor_harness"
        assert plain_env["LIB_CACHE_DIR"] == str(cache_dir() / "lib")
    finally:
        contained.close()
        plain.close()


def test_a_sandboxed_childs_death_by_a_signal_is_said_as_the_signal():
    """bubblewrap exits 128 + N when what it ran was killed by signal N: said as an exit code, an abort read as
    'exit code 134'."""
    from gpu_harness.runner import _describe_exit

    assert _describe_exit(134, sandboxed=True) == "killed by SIGABRT"
    assert _describe_exit(134) == "exit code 134" and _describe_exit(-6) == "killed by SIGABRT"
    assert _describe_exit(3, sandboxed=True) == "exit code 3"


def test_the_lab_import_probe_shows_a_contained_import_fail_in_full(tmp_path):
    """lab/tools/contained_import.py imports as a contained child would: a module that writes beside itself at
    import fails there (the file system is read-only but for the scratch folder), with its whole traceback, and
    one that writes under TMPDIR imports."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "writes_beside_itself.py").write_text("open(__file__ + '.cache', 'w').write('x')\n")
    (site / "writes_in_tmpdir.py").write_text(
        "import os, tempfile\nwith open(os.path.join(tempfile.gettempdir(), 'c'), 'w') as f:\n    f.write('x')\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{root}"}
    probe = subprocess.run(
        [sys.executable, str(root / "lab/tools/contained_import.py"), "writes_in_tmpdir", "writes_beside_itself"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert probe.returncode == 1, probe.stderr
    assert "writes_in_tmpdir imports" in probe.stdout
    assert "writes_beside_itself does not import" in probe.stdout
    assert "Read-only file system" in probe.stderr and "writes_beside_itself.py" in probe.stderr
    assert not (site / "writes_beside_itself.py.cache").exists()
