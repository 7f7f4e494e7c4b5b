"""Two evaluations on one cached task instance never see each other's state.

A process caches one task instance per task (gpu_harness.tasks.get_task) and the harness service evaluates
kernel after kernel with it; what belongs to one evaluation (the ends of its output exchange, the work its judge
started ahead, its judging's seconds) lives in the JudgeSide and ChildSide made for that evaluation
(gpu_harness/tasks/sides.py). Here two evaluations of the CPU task and of a cuda-sm90 folder task (its judge on
the CPU, its device exchange played by host memory) run interleaved on one instance, each with its own
candidate, and each is judged on its own outputs; two attention judges of one instance keep their own figures.
"""

import types
from pathlib import Path

import numpy as np
import pytest

from gpu_harness.evaluate import evaluate
from gpu_harness.evaluation import Evaluation, Plan
from gpu_harness.exchange import SLOTS
from gpu_harness.result import EvalResult, ScenarioOutcome
from gpu_harness.tasks import derive_seed, folder_task, get_task
from gpu_harness.tasks.sides import ChildSide
from gpu_harness.taskscaffold import scaffold
from gpu_harness.taskspec import load_spec
from gpu_harness.verdict import TimingLimits

from .conftest import needs_gxx
from .test_evaluation_phases import ScriptedChild

REPO = Path(__file__).resolve().parents[2]


class StartedChild(ScriptedChild):
    def start(self, job):
        self.job = job


def scripted_evaluation(task, sc, workdir, seed, exchange_info):
    """An evaluation of one scenario whose child (scripted) puts seed a, a again and seed b into slots 0, 1, 2;
    the test writes those slots through a ChildSide of its own."""
    workdir.mkdir()
    res = EvalResult(task=task.name, kernel_sha256="", kernel_source="", status="error", baselines=[])
    res.scenarios = [ScenarioOutcome(sc.id, dict(sc.params), correct=False, reason="not run")]
    seed_a, seed_b = derive_seed(seed, sc.id, "a"), derive_seed(seed, sc.id, "b")
    script = [
        {"ev": "ready"},
        {"ev": "loaded", "exchange": exchange_info},
        {"ev": "calling", "sid": sc.id, "run": "a"},
        {"ev": "outputs", "sid": sc.id, "run": "a", "seed": seed_a, "slot": 0},
        {"ev": "outputs", "sid": sc.id, "run": "a2", "seed": seed_a, "slot": 1},
        {"ev": "outputs", "sid": sc.id, "run": "b", "seed": seed_b, "slot": 2},
        {"ev": "checked"},
    ]
    child = StartedChild(script)
    child.workdir = str(workdir)
    plan = Plan([sc], [], {}, seed, False, {}, True, None)
    return Evaluation(res, task, child, plan, TimingLimits(), "dev", lambda _line: None), (seed_a, seed_a, seed_b)


def run_two_interleaved(task, sc, tmp_path, honest, wrong):
    """Evaluations A (an honest candidate) and B (a wrong one) of `sc` on one task instance, interleaved: both
    start (each child creating its exchange, each judge attaching), both children put their outputs, then A
    is checked, B is checked and closed, and A closes last. Returns (A, B)."""
    sides = {name: ChildSide(task) for name in "ab"}
    evaluations = {}
    for name, seed in (("a", 11), ("b", 22)):
        outdir = tmp_path / name / "out"
        info = sides[name].create_exchange(task.output_nbytes(sc.params), SLOTS, str(outdir))
        evaluations[name] = scripted_evaluation(task, sc, tmp_path / name, seed, info)
    a, seeds_a = evaluations["a"]
    b, seeds_b = evaluations["b"]
    a.start("a.so")
    b.start("b.so")
    for slot, seed in enumerate(seeds_a):
        sides["a"].export_outputs(honest(task, sc.params, seed), slot)
    for slot, seed in enumerate(seeds_b):
        sides["b"].export_outputs(wrong(task, sc.params, seed), slot)
    a.check_correctness()
    b.check_correctness()
    b.close()
    a.close()
    return a, b


def assert_each_judged_on_its_own(a, b):
    (oa,), (ob,) = a.res.scenarios, b.res.scenarios
    assert oa.correct and oa.reason is None, oa.reason
    assert not ob.correct and ob.reason.startswith("seed a: "), ob.reason
    assert a.session.closed and b.session.closed


# ---- the CPU task ----


def numpy_honest(task, params, seed):
    ref = task.reference_outputs(params, task.make_inputs(params, seed))
    return {name: ref[name].astype(np.float32) for name in ref}


def numpy_wrong(task, params, seed):
    return {name: out * np.float32(1.01) for name, out in numpy_honest(task, params, seed).items()}


def test_two_interleaved_evaluations_of_the_cpu_task_each_judge_their_own_outputs(tmp_path):
    task = get_task("matmul_cpu")  # the process's cached instance
    sc = task.select(["m7_n13_k5"])[0]
    a, b = run_two_interleaved(task, sc, tmp_path, numpy_honest, numpy_wrong)
    assert_each_judged_on_its_own(a, b)
    # each judge read its own evaluation's folder (and took what it read): nothing is left in either
    assert list((tmp_path / "a" / "out").iterdir()) == [] and list((tmp_path / "b" / "out").iterdir()) == []


@needs_gxx
def test_an_evaluation_leaves_nothing_of_itself_on_the_cached_task():
    task = get_task("matmul_cpu")
    naive = REPO / "tasks" / "matmul_cpu" / "naive.cpp"
    first = evaluate("matmul_cpu", naive, scenarios=["m7_n13_k5"], timing=False)
    assert first.status == "correct", first.reason
    before = dict(vars(task))  # after one evaluation: what the process keeps (reference.py, the self check)
    second = evaluate("matmul_cpu", naive, scenarios=["m7_n13_k5", "m127_n255_k65"], timing=False)
    assert second.status == "correct", second.reason
    after = vars(task)
    assert after.keys() == before.keys()
    assert all(after[k] is before[k] for k in before), [k for k in before if after[k] is not before[k]]


# ---- a cuda-sm90 folder task, its judge on the CPU ----


class HostExchange:
    """The device exchange (exchange.DeviceExchange) played by host memory: `create` in one end, `attach` by
    its handle in the other; a closed end cannot be read any more."""

    rings: dict = {}  # handle -> the ring's bytes
    attached: dict = {}  # handle -> the end a parent attached

    def __init__(self, handle, slot_bytes, slots):
        self.handle, self.slot_bytes, self.slots, self.closed = handle, slot_bytes, slots, False

    @classmethod
    def create(cls, slot_bytes, slots):
        torch = pytest.importorskip("torch")
        handle = f"ring{len(cls.rings)}"
        cls.rings[handle] = torch.zeros(slot_bytes * slots, dtype=torch.uint8)
        return cls(handle, slot_bytes, slots), handle

    @classmethod
    def attach(cls, handle, slot_bytes, slots):
        cls.attached[handle] = cls(handle, slot_bytes, slots)
        return cls.attached[handle]

    def slot(self, index, offset, nbytes):
        assert not self.closed, "read after close"
        start = index * self.slot_bytes + offset
        return self.rings[self.handle][start : start + nbytes]

    def close(self):
        self.closed = True


@pytest.fixture
def host_exchange(monkeypatch):
    torch = pytest.importorskip("torch")
    from gpu_harness.tasks import cuda_device

    monkeypatch.setattr(cuda_device, "DeviceExchange", HostExchange)
    monkeypatch.setattr(HostExchange, "rings", {})
    monkeypatch.setattr(HostExchange, "attached", {})
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: types.SimpleNamespace(synchronize=lambda: None))
    return HostExchange


def torch_honest(task, params, seed):
    ref = task.reference_outputs(params, task.make_inputs(params, seed))
    outs = task.new_outputs(params)
    for name, t in outs.items():
        t.copy_(ref[name].to(t.dtype))
    return outs


def torch_wrong(task, params, seed):
    return {name: out * 1.01 for name, out in torch_honest(task, params, seed).items()}


def test_two_interleaved_evaluations_of_a_cuda_task_each_judge_their_own_outputs(tmp_path, host_exchange):
    task = folder_task(load_spec(scaffold("demo_gpu", tmp_path / "task", target="cuda-sm90")), device="cpu")
    sc = task.select(["r7_c33_s0.5"])[0]
    a, b = run_two_interleaved(task, sc, tmp_path, torch_honest, torch_wrong)
    assert_each_judged_on_its_own(a, b)


def test_closing_one_evaluation_leaves_the_others_exchange_open(tmp_path, host_exchange):
    task = folder_task(load_spec(scaffold("demo_gpu", tmp_path / "task", target="cuda-sm90")), device="cpu")
    params = task.select(["r7_c33_s0.5"])[0].params
    child_a, child_b = ChildSide(task), ChildSide(task)
    judge_a, judge_b = task.new_judge(), task.new_judge()
    handles = []
    for child, judge in ((child_a, judge_a), (child_b, judge_b)):
        info = child.create_exchange(task.output_nbytes(params), SLOTS, str(tmp_path))
        judge.attach(info, task.output_nbytes(params), SLOTS, str(tmp_path))
        handles.append(info["ipc_handle"])
    honest_a = torch_honest(task, params, 5)
    child_a.export_outputs(honest_a, 0)
    child_b.export_outputs(torch_wrong(task, params, 6), 0)
    judge_b.close()  # the other evaluation ends first
    assert [host_exchange.attached[h].closed for h in handles] == [False, True]
    got = judge_a.import_outputs(params, 0)
    assert all(bool((got[n] == honest_a[n]).all()) for n in honest_a)
    assert judge_a.judge(params, 5, got).correct
    judge_a.close()
    assert [host_exchange.attached[h].closed for h in handles] == [True, True]


# ---- attention's judge (on the CPU: its work ahead needs the GPU, its figures do not) ----


def test_two_attention_judges_of_one_task_keep_their_own_figures():
    pytest.importorskip("torch")
    from gpu_harness.tasks.attention_fwd import attention_task, reference_module, scenario

    attention_reference = reference_module()
    reference = attention_reference.chunked_reference

    task = attention_task(device="cpu")
    task.parent_setup()
    sc = scenario("bf16", 1, 33, 47, 2, 1, 32, True)

    def honest(seed):
        inp = task.make_inputs(sc.params, seed)
        o, lse = reference(inp["q"], inp["k"], inp["v"], sc.params["causal"], sc.params["softmax_scale"])
        return {"o": o.bfloat16(), "lse": lse}

    stopped = task.new_judge()  # an evaluation that stops mid-way: judged once, never closed
    stopped.ahead([(sc.params, 1, True), (sc.params, 2, False)])
    assert stopped.judge(sc.params, 1, honest(1)).correct
    figures = dict(stopped.seconds)
    assert {"inputs", "reference", "vendor", "compare"} <= figures.keys()
    following = task.new_judge()  # the next evaluation, on the same instance
    assert following.seconds == {}
    first = following.judge(sc.params, 3, honest(3))
    assert first.correct and following.seconds.keys() == figures.keys()
    assert stopped.seconds == figures  # the other judge's work is not counted as its
    stopped.close()
    following.close()
