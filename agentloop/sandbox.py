"""What the agent's shell runs in: a scrubbed environment, its workspace as cwd, and bubblewrap when installed.

Secrets live in this process's environment (the API key, the worker token, KSEEK_* settings); none of them is
passed on. docs/protocol.md, section 3, says what holds with and without bubblewrap.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

# Passed through when set; everything else is dropped.
PASSED_VARIABLES = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
                    "NVIDIA_VISIBLE_DEVICES", "TZ")
# Never passed, even if a future edit adds them above by a broader rule.
SECRET_PREFIXES = ("ANTHROPIC_", "OPENAI_", "KSEEK_", "AWS_", "GITHUB_", "HF_", "HUGGING")
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "API_KEY", "APIKEY", "CREDENTIAL")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper.startswith(SECRET_PREFIXES) or any(word in upper for word in SECRET_WORDS)


def scrubbed_env(workspace: str | os.PathLike, source: dict | None = None) -> dict[str, str]:
    source = os.environ if source is None else source
    env = {name: source[name] for name in PASSED_VARIABLES if name in source and not is_secret_name(name)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"HOME": str(workspace), "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "TMPDIR": "/tmp",
                "PYTHONDONTWRITEBYTECODE": "1"})
    return env


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def bwrap_argv(bwrap: str, workspace: Path, hidden: list[Path], env: dict[str, str], argv: list[str]) -> list[str]:
    """The bubblewrap command line: read-only root, private /tmp and /proc, the workspace writable, `hidden`
    directories (the worker's state, the repository with the harness) replaced by empty ones."""
    cmd = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    workspace = workspace.resolve()
    for path in hidden:
        cmd += ["--tmpfs", str(path.resolve())]
    # After the hiding mounts, so that a workspace inside a hidden directory is visible again.
    cmd += ["--bind", str(workspace), str(workspace), "--chdir", str(workspace), "--clearenv"]
    for name, value in sorted(env.items()):
        cmd += ["--setenv", name, value]
    return cmd + ["--"] + argv
