"""Kernels that reach past the call into what the judge reads from their process: the message pipe (through
`stderr`, an allowlisted import) and the files of the child's scratch folder (through libc functions called at
`printf`'s address plus this host's offset, which no import check sees). Each once hung or crashed the judging
parent; each must end as the candidate's error, with the judge answering."""

import ctypes
import threading
from pathlib import Path

from gpu_harness import evaluate

from .conftest import needs_gxx

pytestmark = [needs_gxx]
NAIVE = (Path(__file__).resolve().parents[2] / "tasks" / "matmul_cpu" / "naive.cpp").read_text()
SCENARIO = ["m7_n13_k5"]


def naive_then(after_call: str, prelude: str = "") -> str:
    """The naive kernel that runs `after_call` (C++ statements; `calls` counts its calls) before it returns."""
    body = NAIVE.replace("    return 0;\n}", f"    ++calls;\n{after_call}\n    return 0;\n}}")
    assert body != NAIVE
    return f"#include <cstdio>\n#include <cstdlib>\n#include <cstdint>\nstatic int calls = 0;\n{prelude}\n{body}"


def _evaluate(tmp_path: Path, source: str):
    kernel = tmp_path / "k.cpp"
    kernel.write_text(source)
    return evaluate("matmul_cpu", kernel, scenarios=SCENARIO, timeout_s=60)


def test_a_timing_message_forged_through_stderr_is_a_protocol_error(tmp_path):
    # the 4th call is the timing's warm-up: the parent then waits for "timed", and reads the forged one first
    forged = '{"ev": "timed", "sid": "m7_n13_k5", "cand_ms": [0.001], "base_ms": {}, "notes": [], "checked": []}'
    prelude = "static char forged[] = " + '"' + forged.replace('"', '\\"') + '\\n";'
    r = _evaluate(
        tmp_path,
        naive_then(
            """    if (calls == 4) {
        int saved = stderr->_fileno;
        for (int fd = 3; fd < 64; ++fd) { stderr->_fileno = fd; fputs(forged, stderr); }
        stderr->_fileno = saved;
    }""",
            prelude,
        ),
    )
    assert r.status == "error" and r.reason.startswith("protocol error: malformed message"), r.reason


def _libc_offset(name: str) -> int:
    """`name`'s address less `printf`'s in this host's libc (the candidate's process loads the same one)."""
    libc = ctypes.CDLL(None)
    return ctypes.cast(getattr(libc, name), ctypes.c_void_p).value - ctypes.cast(libc.printf, ctypes.c_void_p).value


LIBC_CALLS = f"""typedef int (*unlink_fn)(const char*);
typedef int (*mkfifo_fn)(const char*, unsigned);
static void make_fifo(const char* path) {{  // unlink and mkfifo, never imported: printf's address + an offset
    ((unlink_fn)((const char*)&printf + ({_libc_offset("unlink")}L)))(path);
    ((mkfifo_fn)((const char*)&printf + ({_libc_offset("mkfifo")}L)))(path, 0600);
}}"""


def _within(seconds: float, work):
    """What `work()` returns; a judge that has not answered after `seconds` (it once waited for ever) fails."""
    answer = []
    worker = threading.Thread(target=lambda: answer.append(work()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert answer, f"the judge gave no verdict within {seconds} s"
    return answer[0]


def test_a_log_the_kernel_made_a_fifo_is_not_waited_for_after_its_crash(tmp_path):
    source = naive_then('    make_fifo("child.log");\n    abort();', LIBC_CALLS)
    r = _within(120, lambda: _evaluate(tmp_path, source))
    assert r.status == "error" and r.reason.startswith("crash: the candidate's process died"), r.reason


def test_an_output_file_the_kernel_made_a_fifo_is_refused_not_waited_for(tmp_path):
    # the kernel makes slot 3's file a FIFO and names slot 3 in a forged "outputs" message of its own
    forged = '{"ev": "outputs", "sid": "m7_n13_k5", "run": "a", "seed": 1, "slot": 3}'
    prelude = LIBC_CALLS + '\nstatic char forged[] = "' + forged.replace('"', '\\"') + '\\n";'
    source = naive_then(
        """    if (calls == 1) {
        make_fifo("out/slot3_c.npy");
        int saved = stderr->_fileno;
        for (int fd = 3; fd < 64; ++fd) { stderr->_fileno = fd; fputs(forged, stderr); }
        stderr->_fileno = saved;
    }""",
        prelude,
    )
    r = _within(120, lambda: _evaluate(tmp_path, source))
    assert r.status == "error" and "is not a regular file" in r.reason, r.reason


def test_an_output_file_whose_header_claims_more_than_it_holds_is_refused_before_any_allocation(tmp_path):
    import numpy as np
    import pytest

    from gpu_harness.tasks.sides import FileOutputs

    # 16 bytes of data under a header that claims 2^40 floats: numpy would allocate 4 TiB for it
    with open(tmp_path / "slot0_c.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (1 << 40,)})
        f.write(bytes(16))
    files = FileOutputs(("c",))
    files.attach({}, 16, 4, str(tmp_path))
    with pytest.raises(ValueError, match="does not describe its 16 bytes"):
        files.import_({}, 0)


def test_only_the_tail_of_a_log_the_kernel_flooded_is_read(tmp_path):
    import tracemalloc
    import types

    from gpu_harness.runner import ChildSession

    log = tmp_path / "child.log"
    log.write_bytes(b"x" * (32 << 20) + b"the end")  # printf is allowlisted: a kernel printed 600 MB so
    tracemalloc.start()
    try:
        tail = ChildSession.log_tail(types.SimpleNamespace(log_path=str(log)), 100)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert tail.endswith("the end") and len(tail) == 100
    assert peak < 1 << 20, f"{peak} bytes held to read a 100-byte tail"


def test_a_kernel_that_prints_without_end_is_stopped_at_the_file_size_limit(tmp_path):
    # printf is allowlisted and the log is a file of the child's scratch folder: without a limit, a kernel could
    # fill the disk. Past the child's limit on a file's size (256 MiB here) a write fails: this kernel prints up
    # to 1 GiB and aborts where a write failed, so its crash is the limit's proof (it printed it all before)
    source = naive_then(
        """    static char line[1 << 16];
    if (!line[0]) { memset(line, 'x', sizeof line - 2); line[sizeof line - 2] = '\\n'; }
    for (int i = 0; i < (1 << 14); ++i)
        if (fputs(line, stdout) < 0) abort();  // 1 GiB at most""",
        "#include <cstring>",
    )
    r = _within(120, lambda: _evaluate(tmp_path, source))
    assert r.status == "error" and "killed by SIGABRT" in r.reason, r.reason
