"""Kernels that reach past the call into what the judge reads from their process: the message pipe (through
`stderr`, an allowlisted import) and the files of the child's scratch folder (through libc functions called at
`printf`'s address plus this host's offset, which no import check sees). Each once hung or crashed the judging
parent; each must end as the candidate's error, with the judge answering."""

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
