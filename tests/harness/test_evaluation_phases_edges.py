"""The edges of each phase of an evaluation (gpu_harness/evaluation.py), with the scripted child of
test_evaluation_phases.py: what the parent sends and how long it waits, each way the child can fail, the
messages said, the figures kept. Written to kill the mutants `make mutation` found surviving."""

import types

import pytest

from gpu_harness import evaluation as evaluation_module
from gpu_harness.evaluation import HOST_BATCHES, SAVE_MARGIN_S, STAGE_TIMEOUT_S, TIMING, Evaluation, Plan, left
from gpu_harness.exchange import SLOTS
from gpu_harness.result import EvalResult, ScenarioOutcome
from gpu_harness.runner import ChildFailed
from gpu_harness.tasks import derive_seed
from gpu_harness.verdict import TimingLimits
from tests.harness.test_evaluation_phases import SCENARIOS, JudgedTask, ScriptedChild, ScriptedJudge, runs, timed


class RecordingChild(ScriptedChild):
    """The scripted child, also recording how long the parent waited for each message and for what."""

    def __init__(self, script):
        super().__init__(script)
        self.waits = []
        self.started = None

    def recv(self, timeout, what):
        self.waits.append((timeout, what))
        return super().recv(timeout, what)

    def start(self, job):
        self.started = job


class RecordingJudge(ScriptedJudge):
    """The scripted judge, with what the start and the close do to it recorded; it reports the task's
    `seconds_judged` as its judging's seconds."""

    def __init__(self, task):
        super().__init__(task)
        self.seconds = dict(task.seconds_judged)
        self.attached = None
        self.taken = []
        self.done = False
        self.closed = False

    def import_outputs(self, params, slot):
        self.taken.append(params)
        return super().import_outputs(params, slot)

    def attach(self, info, slot_bytes, slots, folder):
        self.attached = (info, slot_bytes, slots, folder)

    def stop_ahead(self):
        self.done = True

    def close(self):
        super().close()
        self.closed = True


class FullTask(JudgedTask):
    """The judged task, with the parts of a task the start and the close reach."""

    call_timeout_base_s = 3.0
    call_timeout_min_rate = 1e6  # s1 (1e6 flops): 4 s a call; s2: 5 s
    baselines_to_warm = ("base",)

    def __init__(self, seconds_judged=None):
        super().__init__()
        self.seconds_judged = seconds_judged or {}

    def output_nbytes(self, params):
        return 100 * params["n"]

    def new_judge(self):
        return RecordingJudge(self)


def make(script, slots=None, *, timing=True, cache=None, reuse=True, deadline=None, limits=None, baselines=("base",),
         task=None, workdir="/nonexistent"):  # fmt: skip
    task = task or FullTask()
    task.slots = slots or {}
    res = EvalResult(task="scripted", kernel_sha256="", kernel_source="", status="error", baselines=list(baselines))
    res.scenarios = [ScenarioOutcome(s.id, s.params, correct=False, reason="not run") for s in SCENARIOS]
    plan = Plan(SCENARIOS, list(baselines), {"base": "base.so"}, 7, timing, {} if cache is None else cache, reuse,
                deadline)  # fmt: skip
    said = []
    child = RecordingChild(script)
    child.workdir = workdir
    ev = Evaluation(res, task, child, plan, limits or TimingLimits(), "dev", said.append)
    ev.job_by_id = {j["id"]: j for j in ev.jobs()}
    return ev, said


# ---- start ----


def test_the_job_names_the_library_the_baselines_and_each_scenarios_seeds_and_warm_ups(tmp_path):
    ev, _ = make([{"ev": "ready"}, {"ev": "loaded", "exchange": {"kind": "files"}}], workdir=str(tmp_path))
    ev.start("cand.so")
    job = ev.session.started
    out = str(tmp_path / "out")
    assert (tmp_path / "out").is_dir()
    assert job["task"] == "scripted" and job["lib"] == "cand.so" and job["outdir"] == out
    assert job["baseline_libs"] == {"base": "base.so"}
    assert job["scenarios"] == [
        {"id": s.id, "params": s.params, "seed_a": derive_seed(7, s.id, "a"), "seed_b": derive_seed(7, s.id, "b"),
         "warm": ["base"]}
        for s in SCENARIOS
    ]  # fmt: skip
    # the exchange is attached with the child's word on where, the largest scenario's outputs, every slot
    assert ev.judge_side.attached == ({"kind": "files"}, 200, SLOTS, out)
    assert ev.session.waits == [(STAGE_TIMEOUT_S, "starting the candidate's process"),
                                (STAGE_TIMEOUT_S, "loading the candidate library")]  # fmt: skip
    assert ev.phases["start_s"] >= 0


def test_a_child_that_fails_to_start_is_a_crash_with_its_error(tmp_path):
    ev, _ = make([{"ev": "exception", "error": "no module"}], workdir=str(tmp_path))
    with pytest.raises(ChildFailed, match="^no module$") as info:
        ev.start("cand.so")
    assert info.value.kind == "crash"
    ev, _ = make([{"ev": "exception"}], workdir=str(tmp_path / "b"))
    with pytest.raises(ChildFailed, match="^child failed to start$"):
        ev.start("cand.so")


def test_a_library_that_does_not_load_is_a_crash_naming_why(tmp_path):
    ev, _ = make([{"ev": "ready"}, {"ev": "exception", "error": "undefined symbol"}], workdir=str(tmp_path))
    with pytest.raises(ChildFailed, match="^loading the library failed: undefined symbol$") as info:
        ev.start("cand.so")
    assert info.value.kind == "crash"
    ev, _ = make([{"ev": "ready"}, {"ev": "other"}], workdir=str(tmp_path / "b"))
    with pytest.raises(ChildFailed, match=r"^loading the library failed: \{'ev': 'other'\}$"):
        ev.start("cand.so")


@pytest.mark.parametrize("error", [ValueError, RuntimeError])
def test_outputs_the_parent_cannot_reach_are_a_protocol_error(tmp_path, error):
    ev, _ = make([{"ev": "ready"}, {"ev": "loaded", "exchange": None}], workdir=str(tmp_path))

    def refuse(*args):
        raise error("no such segment")

    ev.judge_side.attach = refuse
    with pytest.raises(ChildFailed, match="^cannot reach the child's outputs: no such segment$") as info:
        ev.start("cand.so")
    assert info.value.kind == "protocol"


# ---- the whole run ----


def whole_run_script():
    return [
        {"ev": "ready"},
        {"ev": "loaded"},
        *runs("s1", 0, 1, 2),
        *runs("s2", 0, 1, 2),
        {"ev": "checked", "seconds": {"inputs": 1.234, "calls": "lots"}},
        *timed([1.0, 1.0, 1.0]),
        {"ev": "batch_done", "inproc_ms": 10.0},
        *timed([2.0, 2.0, 2.0]),
        {"ev": "batch_done", "inproc_ms": 20.0},
    ]


def test_a_whole_run_is_correct_and_rounds_its_phases_once(tmp_path):
    task = FullTask(seconds_judged={"reference": 0.123456})
    ev, said = make(whole_run_script(), {0: "ok", 1: "ok", 2: "ok"}, workdir=str(tmp_path), task=task)
    ev.run("cand.so")
    assert ev.res.status == "correct", ev.res.reason
    assert all(o.correct for o in ev.res.scenarios)
    assert ev.phases["judge_reference_s"] == 0.12 and ev.phases["child_inputs_s"] == 1.23
    assert "child_calls_s" not in ev.phases  # the child's word is kept only when it is a number
    for name in ("start_s", "correctness_s", "timing_s", "judge_s", "wait_child_s", "take_s", "timing_batch_s"):
        assert name in ev.phases and ev.phases[name] == round(ev.phases[name], 2)
    assert ev.judge_side.done and ev.judge_side.closed and ev.session.closed
    assert said[0] == "checking 2 scenarios (seed 7)" and ev.session.started["lib"] == "cand.so"
    assert 0 <= ev.phases["timing_s"] < 60 and 0 <= ev.phases["correctness_s"] < 60 and 0 <= ev.phases["start_s"] < 60


def test_a_failure_after_the_start_is_an_error_and_still_closes(tmp_path):
    task = FullTask()
    ev, said = make([{"ev": "ready"}, {"ev": "loaded"}, {"ev": "hello", "sid": "s1"}], workdir=str(tmp_path), task=task)
    ev.run("cand.so")
    assert ev.res.status == "error" and ev.res.reason == "protocol error: unexpected message 'hello'"
    assert ev.judge_side.done and ev.judge_side.closed and ev.session.closed
    assert said[-1] == "stopped: protocol error: unexpected message 'hello'"
    assert ev.phases["judge_s"] == 0.0  # nothing judged: the judge's time starts at zero


def test_a_message_of_the_wrong_type_is_a_protocol_error(tmp_path):
    ev, _ = make([{"ev": "ready"}, {"ev": "loaded"}, {"ev": "calling", "sid": ["s1"], "run": "a"}],
                 workdir=str(tmp_path))  # fmt: skip
    ev.run("cand.so")
    assert ev.res.status == "error"
    assert ev.res.reason.startswith("protocol error: malformed message from the child (TypeError: ")


# ---- correctness ----


def test_the_parent_waits_a_calls_bound_for_outputs_and_the_stage_bound_otherwise():
    script = [*runs("s2", 0, 1, 2), {"ev": "checked"}]
    ev, said = make(script, {0: "ok", 1: "ok", 2: "ok"})
    ev.check_correctness()
    call_s = 3.0 + 2e6 / 1e6 + SAVE_MARGIN_S
    assert [w for w, _ in ev.session.waits] == [STAGE_TIMEOUT_S, call_s, STAGE_TIMEOUT_S, STAGE_TIMEOUT_S,
                                                STAGE_TIMEOUT_S]  # fmt: skip
    assert ev.session.waits[1][1] == "running s2 (a)" and ev.current_sid == "s2"
    assert said[-1] == "[1/2] s2: correct (error 0.00e+00 / tolerance 5.0e-01)"
    assert ev.phases["correctness_s"] >= 0


def test_the_judge_is_told_every_seed_ahead_in_the_childs_order():
    ev, _ = make([{"ev": "checked"}])
    ev.check_correctness()
    assert ev.judge_side.ahead_items == [
        (s.params, derive_seed(7, s.id, run), run == "a") for s in SCENARIOS for run in "ab"
    ]


class ErrorTask(FullTask):
    """Outputs are (ok, error, details): the judge reports that error and those details."""

    def judge(self, params, seed, outputs, tolerance=None, spot_check=False):
        from gpu_harness.tasks import Judgement

        ok, error, details = outputs["out"]
        self.judged.append((params["n"], seed, ok, tolerance, spot_check))
        return Judgement(ok, error, 0.5 if tolerance is None else tolerance, None if ok else "too far", details)

    def identical(self, a, b):
        return True


def test_a_scenarios_error_is_the_worst_of_its_seeds_and_details_are_kept_per_seed():
    task = ErrorTask()
    slots = {0: (True, 0.25, {"x": 1, "y": None}), 1: (True, 0.25, {}), 2: (False, 0.75, {"x": 2}),
             3: (True, None, {}), 4: (True, None, {}), 5: (True, 0.1, {})}  # fmt: skip
    script = [*runs("s1", 0, 1, 2), *runs("s2", 3, 4, 5, slots=(3, 4, 5)), {"ev": "checked"}]
    ev, said = make(script, slots, task=task)
    ev.check_correctness()
    s1, s2 = ev.res.scenarios
    assert s1.error == 0.75 and s1.details == {"a_x": 1, "b_x": 2}
    assert not s1.correct and s1.reason == "seed b: too far"
    assert s2.error == 0.1 and s2.correct  # seed a measured no error: seed b's counts
    assert said[1] == "[1/2] s1: WRONG: seed b: too far (error 7.50e-01 / tolerance 5.0e-01)"
    # a smaller error on seed b keeps seed a's
    slots = {0: (True, 0.5, {}), 1: (True, 0.5, {}), 2: (True, 0.25, {})}
    ev, _ = make([*runs("s1", 0, 1, 2), {"ev": "checked"}], slots, task=ErrorTask())
    ev.check_correctness()
    assert ev.res.scenarios[0].error == 0.5
    # and a seed b that measures none keeps seed a's too
    slots = {0: (True, 0.5, {}), 1: (True, 0.5, {}), 2: (True, None, {})}
    ev, _ = make([*runs("s1", 0, 1, 2), {"ev": "checked"}], slots, task=ErrorTask())
    ev.check_correctness()
    assert ev.res.scenarios[0].error == 0.5


def test_a_scenario_without_an_error_says_n_a():
    slots = {0: (True, None, {}), 1: (True, None, {}), 2: (True, None, {})}
    ev, said = make([*runs("s1", 0, 1, 2), {"ev": "checked"}], slots, task=ErrorTask())
    ev.check_correctness()
    assert said[-1] == "[1/2] s1: correct (error n/a / tolerance 5.0e-01)"


def test_a_scenario_short_of_its_three_runs_fails_but_keeps_a_reason_it_already_has():
    script = [*runs("s1", 0, 1, 2)[:3], {"ev": "unsupported", "sid": "s2", "run": "a", "rc": 4}, {"ev": "checked"}]
    ev, _ = make(script, {0: "ok", 1: "ok"})
    s1, s2 = ev.res.scenarios
    s1.correct, s1.reason = True, None  # whatever it said before: two runs are not enough
    ev.check_correctness()
    assert s1.reason == "not all runs completed" and s1.correct is False
    assert s2.reason == "candidate returned 4 (configuration not supported)" and not s2.correct


def test_a_scenario_with_all_three_runs_is_not_called_incomplete():
    ev, _ = make([*runs("s1", 0, 1, 2), {"ev": "checked"}], {0: "ok", 1: "ok", 2: "ok"})
    ev.res.scenarios[0].reason = None
    ev.check_correctness()
    assert ev.res.scenarios[0].correct and ev.res.scenarios[0].reason is None
    assert ev.res.scenarios[1].reason == "not all runs completed"


@pytest.mark.parametrize("ev_name", ["device_error", "exception"])
def test_a_device_error_or_an_exception_is_a_crash_naming_the_scenario_and_run(ev_name):
    ev, _ = make([{"ev": ev_name, "sid": "s1", "run": "b", "error": "bad access"}])
    with pytest.raises(ChildFailed, match=r"^s1 \(b\): bad access$") as info:
        ev.check_correctness()
    assert info.value.kind == "crash"
    assert ev.res.scenarios[0].reason == "device error: bad access"


def test_an_error_naming_no_scenario_blames_none():
    ev, _ = make([{"ev": "exception", "error": "out of memory"}])
    with pytest.raises(ChildFailed, match=r"^ \(\): out of memory$"):
        ev.check_correctness()
    assert [o.reason for o in ev.res.scenarios] == ["not run", "not run"]


def test_an_unsupported_scenario_counts_as_done():
    script = [{"ev": "unsupported", "sid": "s1", "run": "a", "rc": 2}, *runs("s2", 0, 1, 2), {"ev": "checked"}]
    ev, said = make(script, {0: "ok", 1: "ok", 2: "ok"})
    ev.check_correctness()
    assert said[-1].startswith("[2/2] s2: correct")


# ---- timing ----


def test_only_correct_scenarios_are_timed_and_none_without_timing(monkeypatch):
    ev, said = make([], timing=False)
    ev.res.scenarios[0].correct = True
    ev.time_correct_scenarios()
    assert ev.session.sent == [] and "timing_s" in ev.phases
    ev, said = make(timed([2.0, 2.0, 2.0]), {0: "ok"})
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    ev.res.scenarios[1].correct = True
    ev.time_correct_scenarios()
    assert [m["scenario"]["id"] for m in ev.session.sent if m.get("cmd") == "time"] == ["s2"]
    assert said == ["[time 1/1] s2: 2 ms, 0.001 TFLOP/s, no diff vs base"]


def test_the_timing_message_says_no_speedup_for_a_baseline_without_a_median(monkeypatch):
    ev, said = make(timed([2.0, 2.0, 2.0], base_ms={"base": []}), {0: "ok"})
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    ev.res.scenarios[0].correct = True
    ev.time_correct_scenarios()
    assert said == ["[time 1/1] s1: 2 ms, 0.0005 TFLOP/s"]
    o = ev.res.scenarios[0]
    assert o.baseline_ms == {"base": None} and o.speedup == {"base": None}


def test_the_time_command_carries_the_tasks_overrides_and_the_waits_scale_with_the_baselines(monkeypatch):
    task = FullTask()
    task.timing_overrides = {"batch_ms": 50.0}
    ev, _ = make(timed([1.0, 1.0, 1.0]), {0: "ok"}, task=task)
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    ev.time_scenario(SCENARIOS[0], ev.res.scenarios[0])
    sent = ev.session.sent[0]
    assert sent == {"cmd": "time", "scenario": ev.job_by_id["s1"], "baselines": ["base"], **TIMING, "batch_ms": 50.0}
    per_call = 3.0 + 1e6 / 1e6
    waits = [w for w, _ in ev.session.waits]  # the warm-up, then each message of the timing until its deadline
    assert waits[0] == STAGE_TIMEOUT_S and len(waits) == 1 + 3 + 1
    assert waits[1] == pytest.approx(per_call * (TIMING["max_reps"] + 2) * 2 + STAGE_TIMEOUT_S, abs=1.0)
    assert waits[1:] == sorted(waits[1:], reverse=True)  # one deadline for the whole timing
    assert ev.session.waits[0][1] == "timing s1" and ev.current_sid == "s1"


def test_timing_records_the_childs_warm_up_and_repeat_seconds_summed_over_scenarios(monkeypatch):
    seconds = {"warmup": 0.5, "repeats": 1.5, "other": 9.0, "bad": "x"}
    ev, _ = make(timed([1.0, 1.0, 1.0]), {0: "ok"})
    ev.session.script[-2]["seconds"] = seconds  # the "timed" message
    ev.session.script[-2]["notes"] = {"base": "no cuBLAS here"}
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    o = ev.res.scenarios[0]
    ev.time_scenario(SCENARIOS[0], o)
    ev.session.script = timed([1.0, 1.0, 1.0])
    ev.session.script[-2]["seconds"] = {"warmup": 0.25, "repeats": "x"}
    ev.time_scenario(SCENARIOS[0], o)
    assert ev.phases["timing_warmup_s"] == 0.75 and ev.phases["timing_repeats_s"] == 1.5
    assert "timing_other_s" not in ev.phases and "timing_bad_s" not in ev.phases
    assert o.details["base_na"] == "no cuBLAS here"


def test_timing_keeps_the_median_spread_repeats_and_rate(monkeypatch):
    ev, _ = make(timed([1.0, 2.0, 4.0, 4.0, 8.0]), {0: "ok"})
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    o = ev.res.scenarios[0]
    o.correct = True
    ev.time_scenario(SCENARIOS[1], o)
    assert o.time_ms == 4.0 and o.repeats == 5 and o.spread_ms > 0
    assert o.tflops == pytest.approx(2e6 / 4e-3 / 1e12)
    assert o.speedup == {"base": 0.5} and o.correct


def test_a_zero_median_has_no_rate_and_no_speedup_and_is_suspect(monkeypatch):
    ev, _ = make(timed([0.0, 0.0, 0.0]), {0: "ok"})
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    o = ev.res.scenarios[0]
    o.correct, o.reason = True, None
    ev.time_scenario(SCENARIOS[0], o)
    assert o.tflops is None and o.speedup == {"base": None}
    assert not o.correct and o.reason.startswith("suspect timing: non-positive")


def test_a_suspect_timing_is_added_to_the_reason_already_there(monkeypatch):
    ev, _ = make(timed([1.0, 1.0, 1.0]), {0: "ok"})
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: "host clock says so")
    o = ev.res.scenarios[0]
    o.reason = "earlier"
    ev.time_scenario(SCENARIOS[0], o)
    assert o.reason == "earlier; suspect timing: host clock says so" and not o.correct


def test_a_device_error_while_timing_fails_the_scenario_and_stops():
    ev, _ = make([{"ev": "calling"}, {"ev": "device_error", "error": "illegal address"}])
    o = ev.res.scenarios[0]
    o.correct = True
    with pytest.raises(ChildFailed, match="^s1: illegal address$") as info:
        ev.time_scenario(SCENARIOS[0], o)
    assert info.value.kind == "crash"
    assert o.correct is False and o.reason == "device error while timing: illegal address"


def test_an_unexpected_message_while_timing_is_a_protocol_error_and_an_exception_a_crash():
    ev, _ = make([{"ev": "calling"}, {"ev": "outputs"}])
    with pytest.raises(ChildFailed, match="^expected 'timed', got 'outputs'$") as info:
        ev.time_scenario(SCENARIOS[0], ev.res.scenarios[0])
    assert info.value.kind == "protocol"
    ev, _ = make([{"ev": "exception", "error": "segfault"}])
    with pytest.raises(ChildFailed, match="^segfault$") as info:
        ev.time_scenario(SCENARIOS[0], ev.res.scenarios[0])
    assert info.value.kind == "crash"
    ev, _ = make([{"ev": "exception"}])
    with pytest.raises(ChildFailed, match="^exception in child$"):
        ev.time_scenario(SCENARIOS[0], ev.res.scenarios[0])


def test_an_honest_timed_output_keeps_the_scenario_correct(monkeypatch):
    ev, _ = make(timed([1.0, 2.0, 3.0], slots=[0, 1, 0]), {0: "ok", 1: "ok"})
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    o = ev.res.scenarios[0]
    o.correct, o.reason, o.tolerance = True, None, 0.25
    ev.time_scenario(SCENARIOS[0], o)
    assert o.correct and o.reason is None
    seeds = [derive_seed(ev.job_by_id["s1"]["seed_a"], "timed", rep) for rep in range(3)]
    assert len(ev.task.judged) == 2 and (1, seeds[1], "ok", 0.25, True) in ev.task.judged  # the median's call
    assert all(seed in seeds for _n, seed, *_ in ev.task.judged)
    # every call's outputs copied and its slot given back at once, in order
    assert [m for m in ev.session.sent if m.get("cmd") == "free"] == [{"cmd": "free", "slot": s} for s in (0, 1, 0)]
    assert ev.judge_side.taken == [{"n": 1}] * 3


def test_a_wrong_timed_output_marks_the_scenario_incorrect(monkeypatch):
    ev, _ = make(timed([1.0, 1.0, 1.0]), {0: "changed"})
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    o = ev.res.scenarios[0]
    o.correct = True
    ev.time_scenario(SCENARIOS[0], o)
    assert o.correct is False and "(the median's) is wrong" in o.reason


def test_a_bandwidth_above_the_measured_peak_is_suspect(monkeypatch):
    ev, _ = make(timed([1e-9, 1e-9, 1e-9]), {0: "ok"}, limits=TimingLimits(peak_gbps=1.0))
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    o = ev.res.scenarios[0]
    o.correct, o.reason = True, None
    ev.time_scenario(SCENARIOS[0], o)
    assert o.correct is False and o.reason.startswith("suspect timing: ") and "GB/s" in o.reason


# ---- the parent's clock ----


def fake_clock(monkeypatch, *times):
    ticks = iter(times)
    clock = types.SimpleNamespace(perf_counter=lambda: next(ticks), monotonic=evaluation_module.time.monotonic)
    monkeypatch.setattr(evaluation_module, "time", clock)


def test_a_host_batch_is_timed_by_the_parents_clock_per_call(monkeypatch):
    ev, _ = make([{"ev": "batch_ready", "n": 4}, {"ev": "batch_done", "inproc_ms": 8.0}])
    ev.current = "timing s1"
    fake_clock(monkeypatch, 10.0, 10.5)
    host, inproc = ev.host_batch_ms(ev.res.scenarios[0], per_call=2.0)
    assert (host, inproc) == (125.0, 2.0) and ev.session.batch_n == 4
    assert ev.session.sent == [{"cmd": "go"}]
    assert ev.session.waits == [(STAGE_TIMEOUT_S, "timing s1"), (2.0 * 4 + STAGE_TIMEOUT_S, "timing s1 (batch)")]


def test_a_second_host_batch_reuses_the_batch_size_and_a_missing_figure_is_zero(monkeypatch):
    ev, _ = make([{"ev": "batch_done"}])
    ev.session.batch_n = 5
    fake_clock(monkeypatch, 1.0, 1.01)
    host, inproc = ev.host_batch_ms(ev.res.scenarios[0], per_call=1.0, again=True)
    assert host == pytest.approx(2.0) and inproc == 0.0
    assert ev.session.waits == [(1.0 * 5 + STAGE_TIMEOUT_S, "starting the candidate's process (batch)")]


def test_a_device_error_in_a_host_batch_fails_the_scenario():
    ev, _ = make([{"ev": "batch_ready", "n": 2}, {"ev": "batch_done", "error": "launch failed"}])
    o = ev.res.scenarios[0]
    o.correct = True
    with pytest.raises(ChildFailed, match="^device error in batch: launch failed$") as info:
        ev.host_batch_ms(o, 1.0)
    assert info.value.kind == "crash" and o.correct is False and o.reason == "device error in batch: launch failed"


def test_a_host_batch_answered_out_of_order_is_a_protocol_error():
    ev, _ = make([{"ev": "timed"}])
    with pytest.raises(ChildFailed, match="^expected 'batch_ready', got 'timed'$"):
        ev.host_batch_ms(ev.res.scenarios[0], 1.0)
    ev, _ = make([{"ev": "batch_ready", "n": 2}, {"ev": "batch_ready", "n": 2}])
    with pytest.raises(ChildFailed, match="^expected 'batch_done', got 'batch_ready'$"):
        ev.host_batch_ms(ev.res.scenarios[0], 1.0)


def test_the_host_clock_is_tried_host_batches_times_and_the_best_agreement_kept(monkeypatch):
    ev, _ = make([])
    o = ev.res.scenarios[0]
    figures = iter([(5.0, 1.0), (3.0, 1.0), (4.0, 1.0)])
    calls = []

    def batch(o, per_call, again=False):
        calls.append(again)
        return next(figures)

    monkeypatch.setattr(ev, "host_batch_ms", batch)
    ev.session.batch_n = 10
    assert "disagrees" in ev.host_clock(o, 1.0)
    assert calls == [False] + [True] * (HOST_BATCHES - 1)
    assert o.host_ms == 3.0 and o.details["inproc_ms"] == 1.0
    assert ev.session.sent == [{"cmd": "next"}]
    assert "timing_batch_s" in ev.phases


def test_the_host_clock_subtracts_the_batchs_latency_spread_over_its_calls(monkeypatch):
    limits = TimingLimits(batch_latency_ms=20.0)  # 2 ms a call over a batch of 10
    for host, suspect in ((3.3, False), (3.5, True)):  # in-process 1 ms: 1.3 + 0.05 allowed after the latency
        ev, _ = make([], limits=limits)
        monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False, host=host: (host, 1.0))
        ev.session.batch_n = 10
        assert (ev.host_clock(ev.res.scenarios[0], 1.0) is not None) is suspect, host


def test_an_agreeing_host_clock_is_kept_at_once(monkeypatch):
    ev, _ = make([])
    o = ev.res.scenarios[0]
    calls = []
    monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False: calls.append(again) or (1.0, 1.0))
    ev.session.batch_n = 10
    assert ev.host_clock(o, 1.0) is None
    assert calls == [False] and o.host_ms == 1.0


def test_a_worse_agreeing_retry_does_not_replace_the_kept_figures(monkeypatch):
    ev, _ = make([])
    o = ev.res.scenarios[0]
    figures = iter([(3.0, 1.0), (6.0, 1.0), (9.0, 2.0)])  # ratios 3, 6, 4.5: the first is the best
    monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False: next(figures))
    ev.session.batch_n = 10
    ev.host_clock(o, 1.0)
    assert o.host_ms == 3.0 and o.details["inproc_ms"] == 1.0


def test_a_zero_in_process_figure_compares_without_dividing_by_zero(monkeypatch):
    ev, _ = make([])
    o = ev.res.scenarios[0]
    figures = iter([(1.0, 0.0), (2.0, 0.0), (0.5, 0.0)])
    monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False: next(figures))
    ev.session.batch_n = 10
    assert ev.host_clock(o, 1.0) is not None
    assert o.host_ms == 0.5  # the smallest parent's figure agrees best with a zero


# ---- stop, close and the helpers ----


@pytest.mark.parametrize(
    "kind, says", [("crash", "crash"), ("protocol", "protocol error"), ("timeout", "hang/timeout")]
)
def test_stopping_names_the_kind_and_leaves_finished_scenarios_alone(kind, says):
    ev, said = make([])
    s1, s2 = ev.res.scenarios
    s1.correct, s1.reason = False, None
    s2.correct, s2.reason = True, None
    ev.stopped(ChildFailed(kind, "boom"))
    assert ev.res.reason == f"{says}: boom"
    assert s1.reason == f"evaluation stopped ({says})" and s2.reason is None and s2.correct
    assert said == [f"stopped: {says}: boom"]


def test_stopping_before_any_scenario_ran_blames_none():
    ev, _ = make([])
    ev.res.scenarios[0].reason = "seed a: wrong"
    ev.stopped(ChildFailed("crash", "boom"))
    assert ev.res.scenarios[0].reason == "seed a: wrong"
    assert ev.res.scenarios[1].reason == "not run: evaluation stopped (crash)"


def test_outputs_that_cannot_be_taken_are_a_protocol_error_and_the_slot_is_not_freed():
    ev, _ = make([])

    def broken(params, slot):
        raise ValueError("truncated")

    ev.judge_side.import_outputs = broken
    with pytest.raises(ChildFailed, match="^outputs in slot 3: truncated$") as info:
        ev.take({"n": 1}, 3)
    assert info.value.kind == "protocol" and ev.session.sent == []


def test_the_wait_is_cut_to_what_is_left_before_the_deadline(monkeypatch):
    now = evaluation_module.time.monotonic()
    assert left(None, 5.0) == 5.0
    assert left(now + 100.0, 5.0) == 5.0
    assert 1.0 < left(now + 2.0, 5.0) <= 2.0
    assert left(now - 10.0, 5.0) == 0.0
    ev, _ = make([{"ev": "x"}], deadline=now + 2.0)
    ev.recv(60.0, "something")
    ((wait, what),) = ev.session.waits
    assert 1.0 < wait <= 2.0 and what == "something"


def test_no_baseline_is_warmed_without_timing_and_a_cached_one_is_not_warmed():
    ev, _ = make([], timing=False)
    assert [j["warm"] for j in ev.jobs()] == [[], []]
    cache = {("scripted", "s1", "dev", "v1", "base"): 1.0}
    ev, _ = make([], cache=cache)
    assert [j["warm"] for j in ev.jobs()] == [[], ["base"]]
    ev, _ = make([], cache=cache, reuse=False)
    assert [j["warm"] for j in ev.jobs()] == [["base"], ["base"]]
    task = FullTask()
    task.baselines_to_warm = ()
    ev, _ = make([], task=task)
    assert [j["warm"] for j in ev.jobs()] == [[], []]


def test_the_baseline_cache_is_keyed_by_task_scenario_device_versions_and_baseline(monkeypatch):
    cache = {}
    ev, _ = make(timed([1.0, 1.0, 1.0]), {0: "ok"}, cache=cache)
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    ev.time_scenario(SCENARIOS[1], ev.res.scenarios[1])
    key = ("scripted", "s2", "dev", "v1", "base")
    assert cache == {key: 2.0, (*key, "interval"): [2.0, 2.0]}


def test_a_batch_faster_than_its_latency_counts_as_no_time_of_the_parents(monkeypatch):
    ev, _ = make([], limits=TimingLimits(batch_latency_ms=20.0))  # 2 ms a call over a batch of 10
    monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False: (2.0, 0.5))
    ev.session.batch_n = 10
    assert ev.host_clock(ev.res.scenarios[0], 1.0) is None


def test_the_kept_host_figures_compare_ratios_even_below_a_millisecond(monkeypatch):
    ev, _ = make([])
    o = ev.res.scenarios[0]
    figures = iter([(2.0, 0.5), (1.5, 0.25), (1.9, 0.25)])  # ratios 4, 6, 7.6: the first agrees best
    monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False: next(figures))
    ev.session.batch_n = 10
    ev.host_clock(o, 1.0)
    assert (o.host_ms, o.details["inproc_ms"]) == (2.0, 0.5)


def test_the_scenario_being_run_when_the_child_failed_is_marked_incorrect():
    ev, _ = make([])
    ev.res.scenarios[1].correct, ev.current_sid = True, "s2"
    ev.stopped(ChildFailed("crash", "boom"))
    assert ev.res.scenarios[1].correct is False and ev.res.scenarios[1].reason == "crash: boom"


def test_a_zero_rate_is_said_as_zero_and_each_baselines_speedup_is_listed(monkeypatch):
    ev, said = make(timed([0.0, 0.0, 0.0]), {0: "ok"})
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    ev.res.scenarios[0].correct = True
    ev.time_correct_scenarios()
    assert said == ["[time 1/1] s1: 0 ms, 0 TFLOP/s"]
    ev, said = make(
        timed([1.0, 1.0, 1.0], base_ms={"base": [2.0], "other": [1.0]}), {0: "ok"}, baselines=("base", "other")
    )
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    ev.res.scenarios[0].correct = True
    ev.time_correct_scenarios()
    assert said == ["[time 1/1] s1: 1 ms, 0.001 TFLOP/s, x2.00 vs base, no diff vs other"]  # as its table row


def test_a_device_error_in_the_host_clocks_batch_fails_the_scenario_it_times():
    ev, _ = make([{"ev": "batch_ready", "n": 2}, {"ev": "batch_done", "error": "launch failed"}])
    o = ev.res.scenarios[0]
    with pytest.raises(ChildFailed, match="^device error in batch: launch failed$"):
        ev.host_clock(o, 1.0)
    assert o.correct is False and o.reason == "device error in batch: launch failed"


def test_the_host_clock_checks_agreement_only_not_the_rate(monkeypatch):
    # the rate is checked on the median (time_scenario); a batch's calls are judged by the two clocks alone
    ev, _ = make([], limits=TimingLimits(peak_tflops=1.0, peak_gbps=1.0))
    monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False: (1e-10, 1e-10))
    ev.session.batch_n = 10
    assert ev.host_clock(ev.res.scenarios[0], 1.0) is None


def test_an_equally_agreeing_retry_keeps_the_first_figures(monkeypatch):
    ev, _ = make([])
    o = ev.res.scenarios[0]
    figures = iter([(3.0, 1.0), (6.0, 2.0), (9.0, 3.0)])  # the same ratio each time
    monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False: next(figures))
    ev.session.batch_n = 10
    ev.host_clock(o, 1.0)
    assert (o.host_ms, o.details["inproc_ms"]) == (3.0, 1.0)


def test_a_declined_scenario_stays_failed_whatever_the_child_sends_after():
    script = [*runs("s2", 0, 1, 2), {"ev": "unsupported", "sid": "s1", "run": "a", "rc": 3},
              {"ev": "outputs", "sid": "s1", "run": "b", "seed": 2, "slot": 0}, {"ev": "checked"}]  # fmt: skip
    ev, said = make(script, {0: "ok", 1: "ok", 2: "ok"})
    ev.check_correctness()
    s1 = ev.res.scenarios[0]
    assert s1.correct is False and s1.reason == "candidate returned 3 (configuration not supported)"
    assert said[-1].startswith("[3/2] s1: WRONG: candidate returned 3")  # every finished scenario message counts


def test_correctness_judges_each_output_with_its_seed_and_its_scenarios_params():
    script = [*runs("s2", 0, 1, 2), {"ev": "checked"}]
    ev, _ = make(script, {0: "ok", 1: "ok", 2: "ok"})
    ev.check_correctness()
    assert [(n, seed, spot) for n, seed, _, _, spot in ev.task.judged] == [(2, 1, False), (2, 2, False)]
    assert ev.judge_side.taken == [{"n": 2}] * 3
    assert ev.phases["judge_s"] > 0 and ev.phases["take_s"] > 0 and ev.phases["wait_child_s"] > 0
    assert set(ev.phases) == {"judge_s", "take_s", "wait_child_s", "correctness_s"}


def test_outputs_that_differ_between_two_runs_say_so_exactly():
    script = [*runs("s1", 0, 1, 2), {"ev": "checked"}]
    ev, _ = make(script, {0: "ok", 1: "ok, but not the same", 2: "ok"})
    ev.check_correctness()
    assert ev.res.scenarios[0].reason == "outputs differ between two runs on identical inputs (a race?)"
    assert ev.res.scenarios[0].correct is False
