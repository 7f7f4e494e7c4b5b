"""A kernel evaluated through the agent's `evaluate` tool runs in a process that holds none of the worker's secrets,
and, in the sandbox, cannot read them from the agent's own process either (issue 15, finding 1).

The harness passes its own environment on to the candidate's process (gpu_harness/runner.py), so the loop must
start the harness from a scrubbed one. These tests read the environment of the very process that loads the
kernel (/proc/PID/environ of every `gpu_harness.child` descended from this test) while the real harness runs.
The control test shows the observation works: the harness started with the secrets hands them to the kernel's
process. Only environments are checked, never timing verdicts, so a loaded machine cannot fail these.

What a kernel could read is tested with a stand-in for the harness (tests/agentloop/hostile_harness.py), started
by HarnessEvaluator exactly as the real one is: a real kernel cannot even try, since the harness's dependency
check refuses file access and system calls in its library (gpu_harness/depcheck.py), and the assembler's
`.incbin` of a /proc file reads nothing (its size is 0). So the stand-in does it in Python.
"""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentloop.agent import Agent, Host
from agentloop.config import Budgets
from agentloop.evaluator import HarnessEvaluator
from agentloop.sandbox import Sandbox
from agentloop.trace import TraceWriter, read_trace
from tests.agentloop.helpers import NAIVE, anthropic_model, make_config, payloads
from tests.agentloop.messages_api import MessagesServer, Reply, Script, tool_use

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")

REPO = Path(__file__).resolve().parents[2]
SECRETS = {"ANTHROPIC_API_KEY": "sk-ant-do-not-leak-1234", "KSEEK_WORKER_TOKEN": "kst_do_not_leak_5678"}
SCENARIO = ["m64_n64_k64"]
BWRAP = pytest.mark.sandbox


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _descends_from_us(pid: int) -> bool:
    me, seen = os.getpid(), 0
    while pid and pid > 1 and seen < 64:
        pid, seen = _parent(pid), seen + 1
        if pid == me:
            return True
    return False


class ChildEnvironments:
    """Collects the environment of every harness child (the process that loads the kernel) started below this
    test process, while it runs."""

    def __init__(self, marker: bytes = b"gpu_harness.child"):
        self.marker = marker
        self.seen: dict[int, dict[str, str]] = {}
        self.pid_namespaces: set[str] = set()
        self.net_namespaces: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self._stop.is_set():
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) in self.seen:
                    continue
                pid = int(entry)
                try:
                    if self.marker not in Path(f"/proc/{pid}/cmdline").read_bytes():
                        continue
                    raw = Path(f"/proc/{pid}/environ").read_bytes()
                    namespace = os.readlink(f"/proc/{pid}/ns/pid")
                    network = os.readlink(f"/proc/{pid}/ns/net")
                except OSError:
                    continue
                if raw and _descends_from_us(pid):
                    self.pid_namespaces.add(namespace)
                    self.net_namespaces.add(network)
                    self.seen[pid] = dict(
                        item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item
                    )
            self._stop.wait(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


def leaked(environments: dict[int, dict[str, str]]) -> set[str]:
    return {
        name
        for env in environments.values()
        for name, value in env.items()
        if name in SECRETS or value in SECRETS.values()
    }


@pytest.mark.parametrize(
    "sandboxed", [pytest.param(True, id="bubblewrap", marks=BWRAP), pytest.param(False, id="unsandboxed")]
)
def test_a_kernel_evaluated_through_the_evaluate_tool_cannot_see_the_api_key_or_the_worker_token(
    tmp_path, monkeypatch, sandboxed
):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    turns = [Reply([tool_use("evaluate", {"scenarios": "quick"})])]
    with MessagesServer(Script(turns)) as server, ChildEnvironments() as children:
        trace = TraceWriter(tmp_path / "trace.jsonl")
        # The real harness (the loop's default evaluator), as a worker runs it: with the run's GPU in extra_env.
        agent = Agent(
            run_id="env",
            config=make_config(budgets=Budgets(steps=1)),
            model=anthropic_model(server),
            sinks=[trace],
            host=Host(
                tmp_path / "ws", Sandbox.choose(unsandboxed=not sandboxed), extra_env={"CUDA_VISIBLE_DEVICES": "0"}
            ),
        )
        agent.run()
        trace.close()
    events = read_trace(tmp_path / "trace.jsonl")
    evaluation = payloads(events, "evaluation")[0]
    assert evaluation["result"]["status"] in ("correct", "incorrect"), evaluation["result"].get("reason")
    assert children.seen, "no harness child process was observed"
    assert leaked(children.seen) == set()
    assert all(env.get("CUDA_VISIBLE_DEVICES") == "0" for env in children.seen.values())
    # Under bubblewrap the kernel's process lives in a PID namespace of its own: it cannot see this process.
    ours = os.readlink("/proc/self/ns/pid")
    assert (ours in children.pid_namespaces) is not sandboxed
    # ... and in a network namespace of its own: nothing listening on this host's loopback is in its reach.
    assert (os.readlink("/proc/self/ns/net") in children.net_namespaces) is not sandboxed
    assert payloads(events, "status")[0]["config"]["sandbox"] == ("bubblewrap" if sandboxed else "none")


DRIVER = """
import json, sys
from pathlib import Path
from agentloop.evaluator import HarnessEvaluator
from agentloop.sandbox import Sandbox

hostile, folder, unsandboxed, kernel = sys.argv[1:]

class Hostile(HarnessEvaluator):
    service_argv = [sys.executable, hostile, folder]

evaluator = Hostile(timeout_s=60, sandbox=Sandbox.choose(unsandboxed=unsandboxed == "1", hidden=[Path(folder)]))
print(json.dumps(evaluator("matmul_cpu", Path(kernel), "quick")))
evaluator.close()
"""


@pytest.fixture
def state_folder():
    """A worker's state folder holding a secret, outside /tmp (the sandbox's /tmp is private whatever it hides)."""
    folder = Path.home() / ".cache" / f"kseek-harness-reach-{os.getpid()}-{id(object())}"
    (folder / "state").mkdir(parents=True)
    (folder / "state" / "settings.txt").write_text("kst_written_in_the_state_folder")
    try:
        yield folder / "state"
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def evaluate_with_the_stand_in(tmp_path, state_folder, unsandboxed: bool) -> dict:
    """HarnessEvaluator run by a process started with the secrets in its environment, as the worker is, with the
    stand-in in the harness's place; what the stand-in found."""
    kernel = tmp_path / "kernel.cpp"
    kernel.write_text(NAIVE)
    env = {**os.environ, **SECRETS, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            DRIVER,
            str(Path(__file__).with_name("hostile_harness.py")),
            str(state_folder),
            "1" if unsandboxed else "0",
            str(kernel),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@BWRAP
def test_code_the_harness_runs_reads_no_secret_from_any_process_and_not_the_worker_state(tmp_path, state_folder):
    seen = evaluate_with_the_stand_in(tmp_path, state_folder, unsandboxed=False)
    assert seen["readable"] > 0  # it could read the environments of what it can see: its own sandbox
    assert seen["found"] == [] and seen["folder_files"] == []


def test_control_unsandboxed_the_same_code_reads_both_secrets_from_the_agents_process(tmp_path, state_folder):
    seen = evaluate_with_the_stand_in(tmp_path, state_folder, unsandboxed=True)
    assert {f"{name}={value}" for name, value in SECRETS.items()} <= set(seen["found"])
    assert "kst_written_in_the_state_folder" in seen["found"]


def test_control_the_harness_started_with_secrets_hands_them_to_the_kernels_process(tmp_path):
    kernel = tmp_path / "kernel.cpp"
    kernel.write_text(NAIVE)
    env = {**os.environ, **SECRETS, "PYTHONPATH": str(REPO)}
    code = (
        "import sys; from gpu_harness import evaluate; "
        f"print(evaluate('matmul_cpu', sys.argv[1], scenarios={SCENARIO!r}).status)"
    )
    with ChildEnvironments() as children:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(kernel)], env=env, capture_output=True, text=True, timeout=600
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert children.seen and leaked(children.seen) == set(SECRETS)


def test_secrets_are_refused_in_the_harness_extra_environment():
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY, KSEEK_WORKER_TOKEN"):
        HarnessEvaluator(extra_env={"CUDA_VISIBLE_DEVICES": "1", **SECRETS})


@BWRAP
def test_the_sandboxed_harness_can_read_the_task_folders_its_environment_names_and_not_hidden_ones(tmp_path):
    """KSEEK_TASKS_DIR (a team's own tasks, here under the private /tmp's real counterpart) is mounted read-only
    into the harness's sandbox; a task folder inside a hidden folder stays hidden."""
    tasks, hidden = tmp_path / "team-tasks", tmp_path / "worker-state"
    (tasks / "my_op").mkdir(parents=True)
    (tasks / "my_op" / "task.toml").write_text("target = 'cpu'\n")
    (hidden / "tasks" / "secret_op").mkdir(parents=True)
    (hidden / "tasks" / "secret_op" / "task.toml").write_text("x\n")
    sandbox = Sandbox.choose(hidden=[hidden])
    env = {"PATH": os.environ["PATH"], "KSEEK_TASKS_DIR": os.pathsep.join([str(tasks), str(hidden / "tasks")])}
    home = tmp_path / "home"
    home.mkdir()
    script = "import os, sys; print([os.path.exists(p) for p in sys.argv[1:]])"
    argv = sandbox.harness_argv(home, [], env, [sys.executable, "-c", script, str(tasks / "my_op" / "task.toml"),
                                                str(hidden / "tasks" / "secret_op" / "task.toml")])  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[True, False]"
