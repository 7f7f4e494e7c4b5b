"""Where agent-written code runs: the shell's commands and the harness that compiles and runs the kernel.

Secrets live in this process's environment (the API key, the worker token, KSEEK_* settings). A scrubbed
environment keeps them out of what we start, but not out of reach: a process of the same user can read
/proc/<our pid>/environ. So agent code runs only where it cannot see our processes: under bubblewrap, in PID,
mount and IPC namespaces of its own. Without a working bubblewrap it does not run at all, unless the operator
asked for exactly that (`--unsandboxed`); the run then records `"sandbox": "none"` and its page says
"unsandboxed". docs/protocol.md, section 3, says what holds in each mode.

Services on the host are secrets too: a database that trusts local connections (PostgreSQL, Redis) holds the
dashboard's sessions and token hashes. So the sandbox also has a network namespace of its own (nothing of the
host's network, its loopback included) and the host's listening unix sockets covered, unless the operator lets
agent code reach the network (`KSEEK_AGENT_NETWORK=1`).
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentloop.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[1]

# Passed through when set; everything else is dropped.
PASSED_VARIABLES = (
    "PATH",
    "LANG",
    "LC_ALL",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "TZ",
)
# Never passed, even if a future edit adds them above by a broader rule.
SECRET_PREFIXES = ("ANTHROPIC_", "OPENAI_", "KSEEK_", "AWS_", "GITHUB_", "HF_", "HUGGING")
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "API_KEY", "APIKEY", "CREDENTIAL")

BUBBLEWRAP, NONE, REFUSED = "bubblewrap", "none", "refused"
UNSANDBOXED_FLAG = "--unsandboxed"
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`)"
EXIT_NO_SANDBOX = (
    4  # `agentloop run` and `agentloop worker` exit with it (3 is a refused token); `manage.py serve` reads it
)

# The namespaces every sandboxed process gets; the probe uses the same ones.
NAMESPACES = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
# A network namespace of its own: only a loopback of its own, on which nothing of the host listens.
NO_NETWORK = ["--unshare-net"]
# The operator's opt-in to the host's network (and its unix sockets) for agent code, read by Sandbox.choose.
NETWORK_VARIABLE = "KSEEK_AGENT_NETWORK"
# Unix sockets of the GPU driver's own daemons (persistenced, fabric manager): never covered, whatever CUDA
# may ask of them, since the sandbox must not cost the harness its GPU.
GPU_SOCKET_PREFIXES = ("/run/nvidia", "/var/run/nvidia")
MAX_COVERED_SOCKETS = 256  # a bound on bwrap's command line; a host rarely listens on more than a few dozen


class SandboxUnavailable(ConfigError):
    """No working sandbox on this host, and the operator did not allow running without one."""


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper.startswith(SECRET_PREFIXES) or any(word in upper for word in SECRET_WORDS)


def scrubbed_env(workspace: str | os.PathLike[str], source: Mapping[str, str] | None = None) -> dict[str, str]:
    values = os.environ if source is None else source
    env = {name: values[name] for name in PASSED_VARIABLES if name in values and not is_secret_name(name)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(
        {
            "HOME": str(workspace),
            "TERM": "dumb",
            "PAGER": "cat",
            "GIT_PAGER": "cat",
            "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    return env


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def network_opt_in(source: dict[str, Any] | None = None) -> bool:
    """Whether the operator let agent code reach the host's network (KSEEK_AGENT_NETWORK=1, true or yes)."""
    value = (os.environ if source is None else source).get(NETWORK_VARIABLE, "")
    return value.strip().lower() in ("1", "true", "yes")


@functools.lru_cache(maxsize=2)
def working_bwrap(network: bool = False) -> tuple[str | None, str]:
    """(path, "") when bubblewrap can make its namespaces here, else (None, why not). Probed once a process: an
    installed bwrap fails where user namespaces are off (some containers, some hardened kernels). Without
    `network`, with the network namespace too, as every sandboxed process then gets it."""
    path = bwrap_path()
    if path is None:
        return None, "`bwrap` is not on PATH"
    namespaces = NAMESPACES if network else NAMESPACES + NO_NETWORK
    argv = [path, *namespaces, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]
    try:
        probe = subprocess.run(argv, env=scrubbed_env("/"), stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"`{path}` could not be run: {exc}"
    if probe.returncode != 0:
        said = probe.stderr.decode(errors="replace").strip()[-300:]
        return None, f"`{path}` is installed but cannot make its namespaces here (exit {probe.returncode}: {said})"
    return path, ""


def bwrap_argv(
    bwrap: str, workspace: Path, hidden: list[Path], env: dict[str, str], argv: list[str], network: bool = False
) -> list[str]:
    """The shell's bubblewrap command line: read-only root, private /tmp, /proc and /dev, the workspace writable,
    `hidden` directories (the worker's state, folders named with --hide) replaced by empty ones, no network
    unless `network`."""
    return _bwrap(bwrap, hidden, [workspace], workspace, env, argv, network=network)


def gpu_device_nodes() -> list[str]:
    """The NVIDIA driver's device nodes (/dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-caps, ...):
    what CUDA needs of /dev, and all that a sandbox adds to its minimal one. None on a host without the driver."""
    return sorted(glob.glob("/dev/nvidia*"))


def host_unix_sockets(hidden: Iterable[str | os.PathLike[str]] = ()) -> list[str]:
    """The file-system paths of the unix sockets listening on this host (/proc/net/unix, as this process's
    network namespace sees them): a network namespace of its own does not cut those, and a read-only bind does
    not stop a connect() (PostgreSQL's /run/postgresql/.s.PGSQL.5432 among them). Left out: sockets in /tmp or in
    a hidden folder (the sandbox's own /tmp and empty folders hide them) and the GPU driver's daemons."""
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return []
    covered_already = ["/tmp", *(str(Path(p).resolve()) for p in hidden)]
    found: set[str] = set()
    for line in lines:
        # Num RefCount Protocol Flags Type St Inode Path; flag 0x10000 (__SO_ACCEPTCON) is a listening socket
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/") or not int(fields[3], 16) & 0x10000:
            continue
        path = os.path.realpath(fields[7])
        inside = any(path == top or path.startswith(top.rstrip("/") + "/") for top in covered_already)
        if not inside and not path.startswith(GPU_SOCKET_PREFIXES) and _is_socket(path):
            found.add(path)
    return sorted(found)[:MAX_COVERED_SOCKETS]


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def _network_args(network: bool, hidden: Iterable[str | os.PathLike[str]]) -> list[str]:
    """bwrap's arguments that keep agent code off the host's services: its own network namespace, and /dev/null
    over every listening unix socket of the host. Nothing when the operator opted in to the network."""
    if network:
        return []
    args = list(NO_NETWORK)
    for path in host_unix_sockets(hidden):
        args += ["--ro-bind", "/dev/null", path]
    return args


def _bwrap(
    bwrap: str,
    hidden: Iterable[Path],
    writable: Iterable[Path],
    cwd: Path,
    env: dict[str, str],
    argv: list[str],
    readable: Iterable[Path] = (),
    network: bool = False,
) -> list[str]:
    # A minimal /dev (null, zero, random, tty, a private shm, ...) plus the GPUs, for the harness and for the
    # model's own commands alike (it may run its test programs): not the host's /dev, whose other devices (disks,
    # memory, ...) a root-owned worker would hand its sandbox.
    cmd = [bwrap, *NAMESPACES, "--ro-bind", "/", "/", "--dev", "/dev"]
    for node in gpu_device_nodes():
        cmd += ["--dev-bind", node, node]
    cmd += ["--proc", "/proc", "--tmpfs", "/tmp"]
    # Read-only again over the private /tmp: what the command itself runs from (a checkout and its virtualenv may
    # live under /tmp, as in CI). Before the hiding mounts, so that nothing hidden comes back with them.
    for path in dict.fromkeys(str(Path(p).resolve()) for p in readable):
        if Path(path).exists():
            cmd += ["--ro-bind", path, path]
    for folder in hidden:
        cmd += ["--tmpfs", str(Path(folder).resolve())]
    # After the hiding mounts, so that a writable folder inside a hidden one is visible again.
    for folder in writable:
        path = str(Path(folder).resolve())
        cmd += ["--bind", path, path]
    # Last, so that no bind above shows a covered socket again.
    cmd += _network_args(network, hidden)
    cmd += ["--chdir", str(Path(cwd).resolve()), "--clearenv"]
    for name, value in sorted(env.items()):
        cmd += ["--setenv", name, value]
    return cmd + ["--"] + argv


def harness_sources(env: dict[str, str] | None = None) -> list[Path]:
    """What the harness runs from: this checkout (gpu_harness, kernels, tasks), the Python it runs on, and the
    task folders its environment names (KSEEK_TASKS_DIR, os.pathsep-separated: a team's own tasks, often
    under /tmp or a home folder that the private /tmp or nothing else would show). Read-only; a task folder
    inside a hidden one stays hidden."""
    tasks = [Path(p) for p in (env or {}).get("KSEEK_TASKS_DIR", "").split(os.pathsep) if p]
    return [REPO_ROOT, Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent, *tasks]


@dataclass(frozen=True)
class Sandbox:
    """How one run's agent code runs, decided once: `bubblewrap`; `none` (the operator passed --unsandboxed:
    plain processes of this user, which can read its secrets); or `refused` (no working bubblewrap and no such
    flag: the shell and the harness refuse to start anything, with `refusal` as the reason)."""

    mode: str
    hidden: tuple[Path, ...] = ()  # folders agent code must not see (the worker's state, --hide folders)
    bwrap: str | None = None
    why: str = ""  # why bubblewrap does not work here (mode `refused`)
    network: bool = False  # the operator let agent code reach the host's network (KSEEK_AGENT_NETWORK)

    @classmethod
    def choose(
        cls, *, unsandboxed: bool = False, hidden: Iterable[str | os.PathLike[str]] = (), network: bool | None = None
    ) -> Sandbox:
        """`network`: None reads the operator's KSEEK_AGENT_NETWORK."""
        folders = tuple(Path(p) for p in hidden)
        network = network_opt_in() if network is None else network
        if unsandboxed:
            return cls(NONE, folders, network=True)  # no namespace at all: the host's network too
        path, why = working_bwrap(network)
        return cls(BUBBLEWRAP, folders, path, network=network) if path else cls(REFUSED, folders, why=why)

    @property
    def refusal(self) -> str:
        return (
            f"agent commands do not run on this host: it has no working sandbox ({self.why}), and without one "
            f"a command could read the API key and the worker token from this agent's own processes. To fix: "
            f"{INSTALL_HINT}, or, to run them as this user with no isolation at all, start agentloop with "
            f"{UNSANDBOXED_FLAG} (docs/protocol.md, section 3)"
        )

    def note(self) -> dict[str, Any] | None:
        """The `note` payload a run records at its start and at each resume when its agent code is not fully
        isolated (none, refused, or bubblewrap with the host's network); None for a closed sandbox."""
        if self.mode == NONE:
            text = (
                f"unsandboxed: the operator started this worker with {UNSANDBOXED_FLAG}; the model's commands and "
                "kernels run as the worker's user with no isolation and can read its secrets (docs/protocol.md, section 3)"
            )
            return {"level": "warning", "sandbox": NONE, "text": text}
        if self.mode == REFUSED:
            return {"level": "error", "sandbox": REFUSED, "text": self.refusal}
        if self.mode == BUBBLEWRAP and self.network:
            text = (
                f"network: the operator set {NETWORK_VARIABLE}; the model's commands and kernels reach the "
                "host's network, its local services included (docs/protocol.md, section 3)"
            )
            return {"level": "warning", "sandbox": BUBBLEWRAP, "network": True, "text": text}
        return None

    def require(self) -> None:
        if self.mode == REFUSED:
            raise SandboxUnavailable(self.refusal)

    def shell_argv(self, workspace: Path, env: dict[str, str], argv: list[str]) -> list[str]:
        if self.mode == BUBBLEWRAP:
            assert self.bwrap is not None  # choose() gives a bubblewrap sandbox its path
            return bwrap_argv(self.bwrap, workspace, list(self.hidden), env, argv, network=self.network)
        return argv

    def harness_argv(self, home: Path, writable: list[Path], env: dict[str, str], argv: list[str]) -> list[str]:
        """The harness's command line: under bubblewrap with the GPUs, its scratch folder
        and build cache writable, the hidden folders hidden, nothing else writable, and, like the shell, no
        network unless the operator opted in: the candidate's process, which the harness starts, inherits it."""
        if self.mode == BUBBLEWRAP:
            assert self.bwrap is not None  # choose() gives a bubblewrap sandbox its path
            sources = harness_sources(env)
            return _bwrap(
                self.bwrap, self.hidden, [home, *writable], home, env, argv, readable=sources, network=self.network
            )
        return argv
