"""Each phase of an evaluation's work with the child (gpu_harness/evaluation.py), alone: a scripted child
(the messages a real child would send) and a task whose judge says what the test wants, no process, no
compiler. The whole flow with a real child is tested by test_matmul_cpu_end_to_end.py and test_cheats_cpu.py."""

import pytest

from gpu_harness.evaluation import Evaluation, Plan
from gpu_harness.result import EvalResult, ScenarioOutcome
from gpu_harness.runner import ChildFailed
from gpu_harness.tasks import Judgement, Scenario, Task, derive_seed
from gpu_harness.tasks.sides import JudgeSide
from gpu_harness.verdict import TimingLimits, median_calls

SCENARIOS = [Scenario("s1", {"n": 1}, flops=1e6, bytes=1e3), Scenario("s2", {"n": 2}, flops=2e6, bytes=2e3)]


class ScriptedChild:
    """The parent's side of a child that sends `script` in order; records what the parent sent."""

    workdir = "/nonexistent"

    def __init__(self, script):
        self.script = list(script)
        self.sent = []
        self.closed = False
        self.batch_n = 0

    def recv(self, timeout, what):
        if not self.script:
            raise ChildFailed("timeout", f"no message while {what}")
        return self.script.pop(0)

    def send(self, **msg):
        self.sent.append(msg)

    def close(self):
        self.closed = True


class ScriptedJudge(JudgeSide):
    """The judge's side of one evaluation of a JudgedTask: the outputs in a slot are the task's `slots[slot]`;
    what it is told ahead is kept."""

    def __init__(self, task):
        super().__init__(task)
        self.ahead_items = None

    def import_outputs(self, params, slot):
        return {"out": self.task.slots[slot]}

    def ahead(self, items):
        self.ahead_items = items


class JudgedTask(Task):
    """Outputs are the strings the child 'sent'; the judge calls "ok" correct and anything else wrong (and
    records each judgement, for the tests)."""

    name = "scripted"
    output_names = ("out",)

    def __init__(self):
        self.judged = []

    def versions(self):
        return "v1"

    def new_judge(self):
        return ScriptedJudge(self)

    def judge(self, params, seed, outputs, tolerance=None, spot_check=False):
        self.judged.append((params["n"], seed, outputs["out"], tolerance, spot_check))
        ok = outputs["out"] == "ok"
        return Judgement(ok, 0.0 if ok else 1.0, 0.5 if tolerance is None else tolerance, None if ok else "wrong")

    def identical(self, a, b):
        return a["out"] == b["out"]


def evaluation(script, slots, limits=None, cache=None, reuse=True):
    task = JudgedTask()
    task.slots = slots
    res = EvalResult(task="scripted", kernel_sha256="", kernel_source="", status="error", baselines=["base"])
    res.scenarios = [ScenarioOutcome(s.id, s.params, correct=False, reason="not run") for s in SCENARIOS]
    plan = Plan(SCENARIOS, ["base"], {}, 7, True, {} if cache is None else cache, reuse, None)
    said = []
    ev = Evaluation(res, task, ScriptedChild(script), plan, limits or TimingLimits(), "dev", said.append)
    ev.job_by_id = {j["id"]: j for j in ev.jobs()}
    return ev, said


def runs(sid, outputs_a, outputs_a2, outputs_b, slots=(0, 1, 2)):
    return [
        {"ev": "calling", "sid": sid, "run": "a"},
        {"ev": "outputs", "sid": sid, "run": "a", "seed": 1, "slot": slots[0]},
        {"ev": "outputs", "sid": sid, "run": "a2", "seed": 1, "slot": slots[1]},
        {"ev": "outputs", "sid": sid, "run": "b", "seed": 2, "slot": slots[2]},
    ]


def test_correctness_needs_seed_a_a_repeat_bit_for_bit_and_seed_b():
    script = runs("s1", 0, 1, 2) + runs("s2", 3, 4, 5, slots=(3, 4, 5)) + [{"ev": "checked"}]
    slots = {0: "ok", 1: "ok", 2: "ok", 3: "ok", 4: "ok but not the same", 5: "ok"}
    ev, said = evaluation(script, slots)
    ev.check_correctness()
    s1, s2 = ev.res.scenarios
    assert s1.correct and s1.reason is None
    assert not s2.correct and "outputs differ between two runs" in s2.reason
    # seed b is held to seed a's tolerance; the judge is told the order ahead (a sets the tolerance, b not)
    assert [(n, tol) for n, _, _, tol, _ in ev.task.judged] == [(1, None), (1, 0.5), (2, None), (2, 0.5)]
    assert [sets for _, _, sets in ev.judge_side.ahead_items] == [True, False, True, False]
    assert [m["slot"] for m in ev.session.sent] == [0, 1, 2, 3, 4, 5]  # every slot given back
    assert any("[2/2] s2: WRONG" in line for line in said)


def test_a_scenario_the_candidate_declines_fails_and_one_never_finished_says_so():
    script = [{"ev": "unsupported", "sid": "s1", "run": "a", "rc": 3}, *runs("s2", 0, 1, 2)[:2], {"ev": "checked"}]
    ev, _ = evaluation(script, {0: "ok"})
    ev.check_correctness()
    s1, s2 = ev.res.scenarios
    assert not s1.correct and s1.reason == "candidate returned 3 (configuration not supported)"
    assert not s2.correct and s2.reason == "not all runs completed"


def test_a_device_error_names_the_scenario_and_stops():
    script = [{"ev": "calling", "sid": "s2", "run": "a"}, {"ev": "device_error", "sid": "s2", "error": "illegal"}]
    ev, _ = evaluation(script, {})
    with pytest.raises(ChildFailed, match="illegal"):
        ev.check_correctness()
    assert ev.current_sid == "s2" and ev.res.scenarios[1].reason == "device error: illegal"


def test_stopping_blames_the_running_scenario_and_marks_the_rest_not_run():
    ev, said = evaluation([], {})
    ev.current_sid = "s1"
    ev.stopped(ChildFailed("timeout", "s1 (a) took too long"))
    s1, s2 = ev.res.scenarios
    assert ev.res.status == "error" and ev.res.reason == "hang/timeout: s1 (a) took too long"
    assert s1.reason == "hang/timeout: s1 (a) took too long" and not s1.correct
    assert s2.reason == "not run: evaluation stopped (hang/timeout)"
    assert said[-1].startswith("stopped: hang/timeout")


def test_a_malformed_message_is_a_protocol_error_not_a_crash_of_the_judge(tmp_path):
    ev, _ = evaluation([{"ev": "ready"}, {"ev": "loaded"}, {"ev": "outputs", "sid": "s1"}], {})
    ev.session.workdir = str(tmp_path)
    ev.outdir = str(tmp_path / "out")
    ev.judge_side.attach = lambda *a: None
    ev.task.output_nbytes = lambda p: 0
    ev.session.start = lambda job: None
    ev.run("lib.so")
    assert ev.res.status == "error" and ev.res.reason.startswith("protocol error: malformed message")
    assert ev.session.closed


FORGED_TIMING = {  # what a kernel wrote onto the message pipe in place of the child's words (fputs to stderr with
    # stderr's file number set to the pipe's): each raised past the judge before, ending the CLI with a traceback
    # and the harness service altogether
    "notes a list": {"notes": []},  # AttributeError
    "no timed calls": {"cand_ms": []},  # ValueError: no samples
    "a batch of no calls": {"batch_n": 0},  # ZeroDivisionError
}


@pytest.mark.parametrize("forged", FORGED_TIMING.values(), ids=FORGED_TIMING.keys())
def test_a_forged_timing_message_is_a_protocol_error_not_a_crash_of_the_judge(tmp_path, forged):
    script = timed([1.0, 1.0, 1.0])
    script[-2].update({k: v for k, v in forged.items() if k != "batch_n"})  # the "timed" message
    script[-1]["n"] = forged.get("batch_n", 10)
    script.append({"ev": "batch_done", "inproc_ms": 1.0})
    ev, _ = evaluation([{"ev": "ready"}, {"ev": "loaded"}, *runs("s1", 0, 1, 2), {"ev": "checked"}, *script],
                       {0: "ok", 1: "ok", 2: "ok"})  # fmt: skip
    ev.plan.scenarios = SCENARIOS[:1]
    ev.session.workdir = str(tmp_path)
    ev.outdir = str(tmp_path / "out")
    ev.judge_side.attach = lambda *a: None
    ev.task.output_nbytes = lambda p: 0
    ev.task.call_timeout_s = lambda sc: 1.0
    ev.session.start = lambda job: None
    ev.run("lib.so")
    assert ev.res.status == "error" and ev.res.reason.startswith("protocol error: malformed message"), ev.res.reason
    assert ev.session.closed


def timed(cand_ms, slots=None, base_ms=None):
    """A child's timing of one scenario: the warm-up, each timed call's outputs (in `slots[rep]`, slot 0 by
    default), the times, then the host clock's batch."""
    outputs = [{"ev": "timed_output", "rep": rep, "slot": slot} for rep, slot in enumerate(slots or [0] * len(cand_ms))]
    return [
        {"ev": "calling"},
        *outputs,
        {"ev": "timed", "cand_ms": cand_ms, "base_ms": base_ms or {"base": [2.0, 2.0, 2.0]}, "notes": {}},
        {"ev": "batch_ready", "n": 10},
    ]


def timed_judgements(ev):
    return [(seed, out) for _n, seed, out, _tol, spot in ev.task.judged if spot]


def test_the_timed_calls_that_set_the_median_are_judged_so_calls_cut_short_to_look_fast_fail(monkeypatch):
    """The attack: a kernel forces the fewest repeats (a slow warm-up), so it knows which call is the last, and
    returns at once without writing on every other. The last call was always judged and one other at random:
    it escaped whenever the draw missed (4 times in 9 at 3 repeats) with the fast calls' median. Now the calls
    that make the median are judged, here call 1, whatever is drawn."""
    monkeypatch.setattr(Evaluation, "host_clock", lambda self, o, per_call: None)
    for _ in range(5):  # the other judged call is drawn at random: the verdict may not depend on it
        ev, _ = evaluation(timed([0.1, 0.1, 3.0], slots=[1, 1, 0]), {0: "ok", 1: "not written"})
        o = ev.res.scenarios[0]
        o.correct = True
        ev.time_scenario(SCENARIOS[0], o)
        assert not o.correct and "output of timed call 1 (the median's) is wrong: wrong" in o.reason
        judged = timed_judgements(ev)
        seeds = {derive_seed(ev.job_by_id["s1"]["seed_a"], "timed", rep): rep for rep in range(3)}
        assert len(judged) == 2 and all(seed in seeds for seed, _ in judged)  # seeds the parent derived itself
        assert seeds[judged[0][0]] == 1 or seeds[judged[1][0]] == 1


def test_an_even_count_of_timed_calls_has_both_middle_calls_judged():
    assert median_calls([5.0, 1.0, 2.0, 9.0]) == [0, 2] and median_calls([3.0, 1.0, 2.0]) == [2]
    assert median_calls([1.0, 1.0, 1.0, 1.0]) == [1, 2]  # ties: by position
    ev, _ = evaluation(timed([5.0, 1.0, 2.0, 9.0], slots=[0, 0, 0, 0]), {0: "ok"})
    o = ev.res.scenarios[0]
    o.correct = True
    ev.judge_timed_calls(SCENARIOS[0], o, [5.0, 1.0, 2.0, 9.0], [{"out": "ok"}] * 4)
    assert o.correct and len(timed_judgements(ev)) == 3  # the two middle calls and one drawn


@pytest.mark.parametrize(
    "script, says",
    [
        (timed([1.0, 1.0, 1.0], slots=[0, 0]), r"3 timed call\(s\), 2 outputs"),
        ([{"ev": "calling"}, {"ev": "timed_output", "rep": 1, "slot": 0}], "timed call 1's outputs came as 0's"),
    ],
)
def test_timed_outputs_that_do_not_match_the_calls_are_a_protocol_error(script, says):
    ev, _ = evaluation(script, {0: "ok"})
    with pytest.raises(ChildFailed, match=says):
        ev.time_scenario(SCENARIOS[0], ev.res.scenarios[0])


def test_the_host_clock_is_tried_again_before_a_disagreement_counts(monkeypatch):
    ev, _ = evaluation([{"ev": "batch_ready", "n": 10}], {})
    o = ev.res.scenarios[0]
    figures = iter([(5.0, 1.0), (1.05, 1.0)])  # (parent ms, child ms) per call: a burst of load, then agreement
    monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False: next(figures))
    ev.session.batch_n = 10
    assert ev.host_clock(o, 1.0) is None
    assert o.host_ms == 1.05 and o.details["inproc_ms"] == 1.0  # the better-agreeing attempt is kept
    assert ev.session.sent[-1] == {"cmd": "next"}


def test_a_host_clock_that_never_agrees_makes_the_timing_suspect(monkeypatch):
    ev, _ = evaluation([], {})
    o = ev.res.scenarios[0]
    monkeypatch.setattr(ev, "host_batch_ms", lambda o, per_call, again=False: (5.0, 1.0))
    ev.session.batch_n = 10
    assert "disagrees with the in-process timer" in ev.host_clock(o, 1.0)
    assert o.host_ms == 5.0


def test_timing_a_scenario_records_the_median_speedups_and_the_baseline_cache(monkeypatch):
    cache = {}
    ev, _ = evaluation(timed([1.0, 1.0, 3.0]), {0: "ok"}, cache=cache)
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    o = ev.res.scenarios[0]
    o.correct = True
    ev.time_scenario(SCENARIOS[0], o)
    assert o.correct and o.time_ms == 1.0 and o.speedup == {"base": 2.0} and o.baseline_ms == {"base": 2.0}
    # the median and the interval on it (verdict.median_interval), which a reuse carries into its verdict
    assert cache == {
        ("scripted", "s1", "dev", "v1", "base"): 2.0,
        ("scripted", "s1", "dev", "v1", "base", "interval"): [2.0, 2.0],
    }
    # a second evaluation reuses the cached median: the child is asked to time no baseline
    ev2, _ = evaluation(timed([1.0, 1.0, 1.0], base_ms={}), {0: "ok"}, cache=cache)
    monkeypatch.setattr(ev2, "host_clock", lambda o, per_call: None)
    ev2.time_scenario(SCENARIOS[0], ev2.res.scenarios[0])
    assert ev2.session.sent[0]["baselines"] == [] and ev2.res.scenarios[0].speedup == {"base": 2.0}
    assert ev2.res.scenarios[0].baseline_ci_ms == {"base": [2.0, 2.0]}
    # unless told not to reuse: then it times the baseline again
    ev3, _ = evaluation(timed([1.0, 1.0, 1.0]), {0: "ok"}, cache=cache, reuse=False)
    monkeypatch.setattr(ev3, "host_clock", lambda o, per_call: None)
    ev3.time_scenario(SCENARIOS[0], ev3.res.scenarios[0])
    assert ev3.session.sent[0]["baselines"] == ["base"]


def test_timing_waits_for_every_repeat_the_tasks_timing_asks_for(monkeypatch):
    # the wait once counted the harness's default max_reps (15) whatever the task's [timing] said: with the
    # min_reps = 100 docs/tasks.md allows, a correct kernel taking a fifth of its per-call bound was a hang
    ev, _ = evaluation(timed([1.0, 1.0, 1.0]), {0: "ok"})
    ev.task.timing_overrides = {"min_reps": 100, "max_reps": 50}
    waits = []
    recv = ev.session.recv
    monkeypatch.setattr(ev.session, "recv", lambda timeout, what: (waits.append(timeout), recv(timeout, what))[1])
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    o = ev.res.scenarios[0]
    o.correct = True
    ev.time_scenario(SCENARIOS[0], o)
    per_call = ev.task.call_timeout_s(SCENARIOS[0])
    assert o.correct and max(waits) >= per_call * 100 * 2  # 100 repeats of the candidate and of the baseline


def test_a_rate_above_the_measured_peak_is_suspect(monkeypatch):
    ev, _ = evaluation(timed([1e-9, 1e-9, 1e-9]), {0: "ok"}, limits=TimingLimits(peak_tflops=1.0, peak_gbps=1.0))
    monkeypatch.setattr(ev, "host_clock", lambda o, per_call: None)
    o = ev.res.scenarios[0]
    o.correct = True
    ev.time_scenario(SCENARIOS[0], o)
    assert not o.correct and "suspect timing" in o.reason


@pytest.mark.parametrize(
    "outran, noted",
    [
        ({"base": 3}, True),  # half of its calls or more: the median holds the wait
        ({"base": 2}, True),
        ({"base": 1}, False),  # one call in four: the median does not
        ({"base": 0}, False),
        ({"base": True}, False),  # the child's count is its word: a malformed one is left out
        ({"base": 9}, False),  # more than its calls
        ({"base": "4"}, False),
        ({"other": 4}, False),  # not a baseline of this evaluation
        ([4], False),
    ],
)
def test_a_baseline_whose_host_path_outran_the_spin_on_most_calls_is_noted(outran, noted):
    ev, _ = evaluation([], {})
    o = ev.res.scenarios[0]
    ev.note_host_waits(o, {"base_ms": {"base": [1.0, 1.1, 1.2, 1.3], "other": [1.0] * 4}, "outran": outran})
    note = o.details.get("base_host_wait")
    if noted:
        count = outran["base"]
        assert note == (
            f"the host path outlasted the GPU's pre-call spin on {count} of 4 timed calls: the time may hold the GPU "
            "waiting on the host"
        )
    else:
        assert note is None and "other_host_wait" not in o.details


@pytest.mark.parametrize(
    "host_ms, words",
    [
        ({"base": 0.912}, " (its host path took a median 0.912 ms from the flush to the call's return)"),
        ({"base": 2}, " (its host path took a median 2 ms from the flush to the call's return)"),
        (None, ""),  # a child that did not say: the count alone
        ({"other": 0.9}, ""),
        ({"base": float("nan")}, ""),  # the child's figures are its word: a malformed one is left out
        ({"base": -1.0}, ""),
        ({"base": True}, ""),
        ({"base": "0.9"}, ""),
        ([0.9], ""),
        ({"base": float("inf")}, ""),
    ],
)
def test_a_host_wait_note_says_how_long_the_host_path_took(host_ms, words):
    ev, _ = evaluation([], {})
    o = ev.res.scenarios[0]
    msg = {"base_ms": {"base": [1.0, 1.1, 1.2, 1.3]}, "outran": {"base": 4}, "host_ms": host_ms}
    ev.note_host_waits(o, msg)
    assert o.details["base_host_wait"] == (
        f"the host path outlasted the GPU's pre-call spin on 4 of 4 timed calls{words}: the time may hold the GPU "
        "waiting on the host"
    )
