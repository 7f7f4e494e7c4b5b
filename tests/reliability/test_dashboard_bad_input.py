"""Bad input on the dashboard's pages and JSON, through a real daphne: each gets a form error or a 400/413 with
the reason, never a 500, nothing half-stored, and a large upload does not take the server's memory with it.
Generated traces (hypothesis) are imported or refused with a reason, whatever they hold."""

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.timeout(300)

STATUS_LINE = json.dumps(
    {
        "v": 1,
        "run_id": "local-1",
        "seq": 0,
        "kind": "status",
        "ts": "2026-11-30T12:00:00+00:00",
        "payload": {"status": "running", "reason": "started", "config": {"task": "matmul_cpu"}},
        "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
    }
)


class Browser:
    """An operator's browser on a live site: its session cookie, a CSRF token, and plain HTTP."""

    def __init__(self, site, port: int):
        self.base = f"http://127.0.0.1:{port}"
        self.cookies = f"sessionid={site.session_for('olga', 'operator')}"
        with urllib.request.urlopen(self.request("/"), timeout=30) as page:
            self.csrf = re.search(r"csrftoken=([^;]+)", page.headers["Set-Cookie"]).group(1)
        self.cookies += f"; csrftoken={self.csrf}"

    def request(self, path: str, data: bytes | None = None, content_type: str | None = None):
        headers = {"Cookie": self.cookies}
        if content_type:
            headers["Content-Type"] = content_type
        return urllib.request.Request(self.base + path, data=data, headers=headers)

    def send(self, request) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as answer:
            return answer.code, answer.read().decode()

    def get(self, path: str) -> tuple[int, str]:
        return self.send(self.request(path))

    def post_form(self, path: str, fields: dict) -> tuple[int, str]:
        body = urllib.parse.urlencode({"csrfmiddlewaretoken": self.csrf, **fields}).encode()
        return self.send(self.request(path, body, "application/x-www-form-urlencoded"))

    def upload_trace(self, content: bytes) -> tuple[int, str]:
        boundary = "kseek-test-boundary"
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{self.csrf}\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="trace"; filename="trace.jsonl"\r\n'
                "Content-Type: application/x-ndjson\r\n\r\n"
            ).encode()
            + content
            + f"\r\n--{boundary}--\r\n".encode()
        )
        return self.send(self.request("/traces/import/", body, f"multipart/form-data; boundary={boundary}"))


def test_bad_input_on_a_live_server_gets_a_form_error_or_a_400_with_the_reason_and_stores_nothing(site):
    port = site.start_server(KSEEK_TRACE_UPLOAD_MAX_BYTES=str(2**20))
    browser = Browser(site, port)

    status, page = browser.post_form(
        "/runs/start/",
        {"task": "matmul_cpu", "model": "m", "review_mode": "auto", "budget_steps": "99999999999999999999"},
    )
    assert status == 400 and "Ensure this value is less than or equal to 1000000" in page

    run_id = site.queue_demo_run()
    status, body = browser.get(f"/runs/{run_id}/steps/?limit=abc")
    assert status == 400 and json.loads(body) == {"error": "limit must be a whole number from 1 to 500, not 'abc'"}

    status, page = browser.upload_trace(b"[" * 100_000 + b"]" * 100_000 + b"\n" + STATUS_LINE.encode())
    assert status == 400 and "line 1 nests deeper than 64 levels" in page

    over_a_mib = (STATUS_LINE + "\n").encode() * (2**20 // len(STATUS_LINE) + 1)
    status, page = browser.upload_trace(over_a_mib)
    assert (
        status == 413
        and "the import takes at most 1,048,576 bytes (1.000 MiB) (KSEEK_TRACE_UPLOAD_MAX_BYTES=1048576)" in page
    )

    assert site.query("SELECT COUNT(*) FROM runs_run")[0][0] == 1  # the demo run alone
    assert "Traceback" not in site.server_log(port)


def resident_kib(pid: int) -> dict:
    status = Path(f"/proc/{pid}/status").read_text()
    return {key: int(re.search(rf"^{key}:\s+(\d+) kB", status, re.M).group(1)) for key in ("VmRSS", "VmHWM")}


def test_a_large_trace_upload_costs_the_server_about_its_size_in_memory_not_ten_times_it(site):
    """daphne's requests leave the form body to Django (kseek_site/daphne_uploads.py), which spools it to a
    temporary file, and the import reads that file line by line (runs/services/trace_import.py). Before, an
    upload cost about ten times its size (an 80 MB one took the server from 76 to 848 MiB)."""
    port = site.start_server()
    pid = site.servers[port].pid
    browser = Browser(site, port)
    lines = [STATUS_LINE] + [
        json.dumps(
            {
                "v": 1,
                "run_id": "local-1",
                "seq": seq,
                "kind": "note",
                "ts": "2026-11-30T12:00:01+00:00",
                "payload": {"text": f"note {seq} " + "x" * 320},
                "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
            }
        )
        for seq in range(1, 40_000)
    ]
    trace = "\n".join(lines).encode()  # about 15 MB
    before = resident_kib(pid)
    status, _ = browser.upload_trace(trace)
    grown_kib = resident_kib(pid)["VmHWM"] - before["VmRSS"]
    assert status == 200 and site.query("SELECT step_count FROM runs_run")[0][0] == 40_000
    # Generous: what is measured is about 1.3 times the upload (daphne queues the body's chunks for the app).
    assert grown_kib * 1024 < 3 * len(trace), f"the server grew by {grown_kib // 1024} MiB for {len(trace) >> 20} MiB"


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.just("nul \x00 inside"),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=10,
)
kinds = st.sampled_from(
    ["status", "note", "evaluation", "question_proposed", "question_decided", "model_message", "bogus"]
)


def trace_lines():
    """Lines of a trace: mostly envelopes of the right shape with fields swapped for something wrong, some run
    headers and harness lines, some that are not JSON or nest too deeply."""
    envelope = st.fixed_dictionaries(
        {
            "v": st.one_of(st.just(1), st.just(1), json_leaf),
            "run_id": st.one_of(st.just("local-1"), st.just("local-1"), json_leaf),
            "seq": st.one_of(st.integers(0, 20), st.integers(-3, 2**40), json_leaf),
            "kind": st.one_of(kinds, json_value),
            "payload": st.one_of(
                st.just({"status": "succeeded"}),
                st.just({"text": "q?", "category": "limit"}),
                st.dictionaries(
                    st.sampled_from(["result", "text", "status", "action", "question_ref", "config", "kernel_source"]),
                    json_value,
                    max_size=4,
                ),
                json_value,
            ),
        },
        optional={
            "ts": st.one_of(st.just("2026-11-30T12:00:00+00:00"), st.text(max_size=20), json_leaf),
            "usage": st.one_of(st.fixed_dictionaries({"tokens_in": json_leaf, "cost_usd": json_leaf}), json_value),
        },
    )
    header = st.fixed_dictionaries(
        {
            "type": st.just("run"),
            "task": st.one_of(st.just("matmul_cpu"), json_leaf),
            "model": json_leaf,
            "review_mode": json_leaf,
        }
    )
    harness = st.fixed_dictionaries(
        {"kind": st.just("evaluation"), "scenarios": json_value, "task": st.just("matmul_cpu")},
        optional={"status": json_leaf},
    )
    as_json = st.one_of(envelope, envelope, header, harness).map(json.dumps)
    return st.one_of(
        as_json,
        as_json,
        as_json,
        st.just("not json {"),
        st.just("[" * 3000 + "]" * 3000),
        st.just(json.dumps({"seq": 1, "kind": "note", "payload": {"a": json.loads("[" * 70 + "]" * 70)}})),
    )


@pytest.mark.django_db
def test_generated_traces_are_imported_or_refused_with_a_reason_and_a_refused_one_stores_nothing():
    from runs.models import Run
    from runs.services import ServiceError, trace_import
    from tests.foundation.factories import make_task

    make_task()

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(trace_lines(), min_size=1, max_size=8))
    def check(lines):
        runs_before = Run.objects.count()
        try:
            run = trace_import(lines=[STATUS_LINE] + lines, name="generated.jsonl")
        except ServiceError as refused:
            assert str(refused)
            assert Run.objects.count() == runs_before
        else:
            assert run.step_count == run.steps.count() >= 1

    check()
