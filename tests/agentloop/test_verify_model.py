"""The `verify` model (agentloop/verify.py, docs/protocol.md 2.12): one full evaluation of the run's starting
kernel, recorded with where it ran, then the run stops; a stop before it and a restart after it evaluate nothing."""

from agentloop.control import ControlInbox, Directive
from agentloop.protocol import VERIFY_MODEL
from agentloop.verify import Verification
from tests.agentloop.helpers import ScriptedEvaluator, make_config, unsandboxed, verdict


def verification(tmp_path, evaluator, *, inbox=None, resume_events=None) -> list[dict]:
    """Run a verify run (a new one, or one resumed from `resume_events`); the events it emitted."""
    emitted = []
    config = None if resume_events else make_config(model=VERIFY_MODEL, kernel="// the claimed kernel\n")
    Verification(
        run_id="v1",
        config=config,
        resume_events=resume_events,
        sinks=[emitted.append],
        host=unsandboxed(tmp_path / "ws"),
        inbox=inbox,
        evaluator=evaluator,
    ).run()
    return emitted


def test_a_verify_run_evaluates_its_source_once_on_the_full_set_and_stops(tmp_path):
    evaluator = ScriptedEvaluator(default=("correct", 1.25))
    events = verification(tmp_path, evaluator)
    assert [e["kind"] for e in events] == ["status", "evaluation", "status"]
    assert evaluator.calls == [("kernel.cpp", "full")]
    evaluation = events[1]["payload"]
    assert (evaluation["purpose"], evaluation["scenario_set"], evaluation["full"]) == ("verify", "full", True)
    assert evaluation["result"]["kernel_source"] == "// the claimed kernel\n"
    assert set(evaluation["environment"]) == {"host", "python", "library_versions", "agentloop_version"}
    assert evaluation["environment"]["library_versions"].startswith("numpy ")
    final = events[-1]["payload"]
    assert (final["status"], final["reason"]) == ("stopped", "verified") and "1.250x over naive" in final["detail"]


def test_a_stop_before_the_evaluation_and_a_restart_after_it_evaluate_nothing(tmp_path):
    inbox = ControlInbox()
    inbox.put(Directive(action="stop", id="d-1"))
    evaluator = ScriptedEvaluator()
    stopped = verification(tmp_path / "a", evaluator, inbox=inbox)
    assert evaluator.calls == [] and stopped[-1]["payload"]["reason"] == "stopped_by_human"

    done = verification(tmp_path / "b", ScriptedEvaluator())
    again = ScriptedEvaluator()
    resumed = verification(tmp_path / "c", again, resume_events=done[:-1])  # killed before its final status
    assert again.calls == [] and resumed[-1]["payload"]["reason"] == "verified"


def test_the_final_detail_writes_a_speedup_inside_the_noise_as_no_difference(tmp_path):
    # The figure-labels audit, finding 6: the detail said "correct, 1.060x over naive" beside the reason
    # "verified" where the verdict's interval holds 1.0; it writes it as every page does.
    def within_noise(task, kernel_path, scenarios):
        result = verdict(kernel_path, scenarios, 1.06)
        for s in result["scenarios"]:
            s.update(time_ms=1.0, time_ci_ms=[1.0, 1.0], baseline_ms={"naive": 1.06})
            s["baseline_ci_ms"] = {"naive": [0.82, 1.31]}
        return result

    final = verification(tmp_path, within_noise)[-1]["payload"]
    assert final["detail"] == "one full evaluation here: correct, no difference (0.820–1.31x) over naive"
