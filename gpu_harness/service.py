"""The harness as a long-lived process: evaluation requests in on stdin, answers out on stdout, one JSON object
per line (python -m gpu_harness.service).

Why a process that stays: an agent run evaluates its kernel many times. A fresh process for each evaluation
pays every time for importing torch, measuring the device's peaks, building or loading the fused reference,
starting the candidate's child process and timing the baselines again. This one keeps them: evaluate()'s
baseline medians and the task objects live as long as it does, and the next evaluation's child is booted as
soon as one ends (evaluate(spare_child=True)). Each evaluation still gets its own fresh child process and a
fresh seed; the candidate never runs in this process.

    request:  {"id": 7, "task": "attention_fwd", "kernel": "/path/k.cu", "scenarios": "quick", "timeout_s": 600}
    answers:  {"id": 7, "progress": "building k.cu (cuda)"}    (any number, as the evaluation goes)
              {"id": 7, "result": {...EvalResult.to_dict()...}}
           or {"id": 7, "error": "unknown scenario ..."}       (a bad request: nothing was evaluated)

Optional request fields: "baselines" (a list of names), "seed". The process ends when stdin closes.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterable
from typing import TextIO


def _answer_channel() -> TextIO:
    """The answers go to the original stdout; anything else that prints (a library's warning, a stray print)
    goes to stderr from here on, so that it cannot corrupt the protocol."""
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def _request_error(req: object) -> str | None:
    if not isinstance(req, dict):
        return "a request is a JSON object"
    for name, kind in (("task", str), ("kernel", str)):
        if not isinstance(req.get(name), kind):
            return f"request field {name!r} must be a string"
    if not isinstance(req.get("scenarios", "quick"), (str, list)):
        return "request field 'scenarios' must be a string or a list of ids"
    timeout = req.get("timeout_s")
    # Finite and not a boolean: 1e999 (inf, read from valid JSON) or NaN was taken as no overall bound at all,
    # and `true` as one second.
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf
    ):
        return "request field 'timeout_s' must be a finite positive number of seconds"
    baselines = req.get("baselines")
    if baselines is not None and not (isinstance(baselines, list) and all(isinstance(b, str) for b in baselines)):
        return "request field 'baselines' must be a list of names"
    return None


def serve(requests: Iterable[str], answers: TextIO) -> None:
    from .evaluate import close_spares, evaluate

    def send(**msg: object) -> None:
        answers.write(json.dumps(msg) + "\n")
        answers.flush()

    try:
        for line in requests:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except ValueError as e:
                send(id=None, error=f"unreadable request: {e}")
                continue
            rid = req.get("id") if isinstance(req, dict) else None
            why = _request_error(req)
            if why:
                send(id=rid, error=why)
                continue
            try:
                result = evaluate(
                    req["task"],
                    req["kernel"],
                    scenarios=req.get("scenarios", "quick"),
                    baselines=req.get("baselines"),
                    seed=req.get("seed"),
                    timeout_s=req.get("timeout_s"),
                    spare_child=True,
                    progress=lambda text: send(id=rid, progress=text),
                )
            except ValueError as e:  # a bad task name or scenario list
                send(id=rid, error=str(e))
                continue
            send(id=rid, result=result.to_dict())
    finally:
        close_spares()


def main() -> int:
    answers = _answer_channel()
    serve(sys.stdin, answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
