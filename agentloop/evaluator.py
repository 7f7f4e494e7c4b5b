"""Runs the harness on a snapshot of the agent's kernel, in a separate process with a scrubbed environment.

Why a separate process: the harness runs the candidate (code the model wrote) in its own child, which inherits
its parent's environment; starting the harness from a process that holds no secrets keeps the API key and the
worker token out of the candidate's reach. Why a snapshot: the file the verdict names is the file judged, even
if something rewrites the workspace meanwhile.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Protocol

from agentloop.sandbox import is_secret_name, scrubbed_env

REPO_ROOT = Path(__file__).resolve().parents[1]


class EvaluatorError(RuntimeError):
    """The harness itself could not produce a verdict (not: the kernel was wrong; that is a verdict)."""


class Evaluator(Protocol):
    def __call__(self, task: str, kernel_path: Path, scenarios: str | list[str]) -> dict:
        """EvalResult.to_dict() of the verdict on the kernel file."""


class HarnessEvaluator:
    def __init__(self, timeout_s: float = 1800, progress: Callable[[str], None] | None = None,
                 extra_env: dict[str, str] | None = None):
        self.timeout_s = timeout_s
        self.progress = progress
        # e.g. CUDA_VISIBLE_DEVICES of the run's GPU. A secret's name is refused even here: the harness passes its
        # whole environment on to the candidate's process (gpu_harness/runner.py), so what reaches the harness
        # reaches the kernel.
        secrets = sorted(name for name in (extra_env or {}) if is_secret_name(name))
        if secrets:
            raise ValueError(f"the harness's environment may not carry secrets: {', '.join(secrets)}")
        self.extra_env = dict(extra_env or {})

    def __call__(self, task: str, kernel_path: Path, scenarios: str | list[str]) -> dict:
        with tempfile.TemporaryDirectory(prefix="kseek-snapshot-") as tmp:
            snapshot = Path(tmp) / Path(kernel_path).name
            shutil.copyfile(kernel_path, snapshot)
            out = Path(tmp) / "result.json"
            env = scrubbed_env(tmp)
            env["PYTHONPATH"] = str(REPO_ROOT)
            for name in ("KSEEK_CACHE_DIR",):  # the harness's build cache location, not a secret
                if name in os.environ:
                    env[name] = os.environ[name]
            env["HOME"] = os.environ.get("HOME", tmp)  # the harness's build cache lives under HOME
            env.update(self.extra_env)
            argv = [sys.executable, "-m", "agentloop.eval_child", task, str(snapshot), json.dumps(scenarios),
                    str(out), str(self.timeout_s)]
            try:
                proc = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True,
                                      timeout=self.timeout_s + 60)
            except subprocess.TimeoutExpired:
                raise EvaluatorError(f"the harness did not finish within {self.timeout_s + 60:g} s") from None
            if self.progress:
                for line in proc.stderr.splitlines():
                    self.progress(line)
            if proc.returncode != 0 or not out.exists():
                tail = (proc.stderr or proc.stdout).strip()[-2000:]
                raise EvaluatorError(f"the harness failed (exit code {proc.returncode}): {tail}")
            result = json.loads(out.read_text())
        result["kernel_path"] = str(kernel_path)
        return result
