"""Benchmark: the peak memory (VmHWM) of a daphne process that receives a large trace upload on the import page.

Starts a site of its own (tests/reliability/live.py: its own SQLite file, or a database of its own when
DATABASE_URL names PostgreSQL), signs an operator in, writes a JSONL trace of --mb megabytes (note events of
about 530 bytes each, whole envelopes; the 400-byte lines of docs/benchmarks.md's 2026-12-01 table lacked them),
posts it to /traces/import/, and prints the server's answer, how long it took, and the server process's resident
memory before and its peak after (VmHWM, /proc/PID/status).

    .venv/bin/python bench/trace_upload_rss.py --mb 80                                   # refused: over 32 MiB
    .venv/bin/python bench/trace_upload_rss.py --mb 80 --limit-bytes 100000000           # imported, streamed
"""

import argparse
import json
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.reliability.live import LiveSite  # noqa: E402


def memory_kib(pid: int) -> dict:
    status = Path(f"/proc/{pid}/status").read_text()
    return {key: int(re.search(rf"^{key}:\s+(\d+) kB", status, re.M).group(1)) for key in ("VmRSS", "VmHWM")}


def _event(seq: int, kind: str, ts: str, payload: dict) -> str:
    """One line of a run's trace as docs/protocol.md 1.1 and 1.3 hold it (the import refuses anything else)."""
    usage = {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0}  # a count or cost belongs on usage events only
    envelope = {"v": 1, "run_id": "local-bench", "seq": seq, "kind": kind, "ts": ts, "payload": payload, "usage": usage}
    return json.dumps(envelope) + "\n"


def write_trace(path: Path, megabytes: float) -> int:
    with path.open("w") as out:
        config = {"task": "matmul_cpu", "model": "bench"}
        out.write(
            _event(
                0, "status", "2026-11-30T12:00:00+00:00", {"status": "running", "reason": "started", "config": config}
            )
        )
        seq, size = 1, 0
        while size < megabytes * 1e6:
            line = _event(
                seq, "note", "2026-11-30T12:00:01+00:00", {"text": f"note {seq} " + "x" * 320, "level": "info"}
            )
            out.write(line)
            size += len(line)
            seq += 1
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=80)
    parser.add_argument("--limit-bytes", type=int, default=None, help="KSEEK_TRACE_UPLOAD_MAX_BYTES for the server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        site = LiveSite(Path(folder)).setup()
        try:
            env = {"KSEEK_TRACE_UPLOAD_MAX_BYTES": str(args.limit_bytes)} if args.limit_bytes else {}
            port = site.start_server(**env)
            pid = site.servers[port].pid
            base = f"http://127.0.0.1:{port}"
            session = site.session_for("bench-operator", "operator")
            cookies = f"sessionid={session}"
            page = urllib.request.urlopen(urllib.request.Request(base + "/traces/import/", headers={"Cookie": cookies}))
            csrf = re.search(r"csrftoken=([^;]+)", page.headers["Set-Cookie"]).group(1)
            trace = Path(folder) / "big.jsonl"
            size = write_trace(trace, args.mb)
            boundary = "kseekbenchboundary"
            body = (
                (
                    f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{csrf}\r\n'
                    f'--{boundary}\r\nContent-Disposition: form-data; name="trace"; filename="big.jsonl"\r\n'
                    "Content-Type: application/x-ndjson\r\n\r\n"
                ).encode()
                + trace.read_bytes()
                + f"\r\n--{boundary}--\r\n".encode()
            )
            before = memory_kib(pid)
            request = urllib.request.Request(
                base + "/traces/import/",
                data=body,
                headers={
                    "Cookie": f"{cookies}; csrftoken={csrf}",
                    "Content-Type": f"multipart/form-data; boundary={boundary}",
                },
            )
            started = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=1800) as answer:
                    status = answer.status
            except urllib.error.HTTPError as answer:
                status = answer.code
            elapsed = time.monotonic() - started
            after = memory_kib(pid)
            steps = site.query("SELECT COUNT(*) FROM runs_step")[0][0]
            print(
                f"upload {size / 1e6:.1f} MB: HTTP {status} in {elapsed:.1f} s, {steps} steps stored; daphne RSS "
                f"{before['VmRSS'] / 1024:.0f} MiB before (peak {before['VmHWM'] / 1024:.0f}), peak {after['VmHWM'] / 1024:.0f} MiB"
            )
        finally:
            site.close()


if __name__ == "__main__":
    main()
