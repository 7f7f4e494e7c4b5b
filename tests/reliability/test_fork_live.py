"""A fork end to end: real daphne, the real worker (`python -m agentloop worker`), the real harness. The demo
trace is imported, forked at its question with the operator's own question and the replay model; the worker
starts the fork from its assignment, asks that question, plays the recording's next turns, and the server
confirms the success on the fork's own evaluation."""

import pytest

from tests.reliability.live import DEMO_MODEL, DEMO_TRACE, wait_until

pytestmark = pytest.mark.timeout(600)


def test_a_forked_replay_runs_through_the_real_server_and_worker_to_success(site, tmp_path):
    port = site.start_server()
    token = site.worker_token("gpu-a")
    ids = site.django(
        "import io\nfrom runs.services import run_fork, trace_import\n"
        "from django.contrib.auth import get_user_model\n"
        "olga = get_user_model().objects.create_user('olga')\n"
        "parent = trace_import(lines=io.BytesIO(open(trace, 'rb').read()), name='demo.jsonl')\n"
        "seq = parent.steps.get(kind='question_proposed').seq\n"
        "fork = run_fork(parent=parent, step_seq=seq, model=model, action='write',"
        " text='Which loop order walks memory contiguously?', user=olga)\n"
        "result = [parent.pk, fork.pk, seq]",
        trace=str(DEMO_TRACE),
        model=DEMO_MODEL,
    )
    parent, fork, seq = ids
    state_dir = tmp_path / "worker"
    site.start_worker(port, token, state_dir)
    done = wait_until(
        lambda: (
            site.query("select status from runs_run where id = ?", (fork,))[0][0] in ("succeeded", "failed", "stopped")
        ),
        400,
    )
    assert done, site.worker_log(state_dir)
    status, reason = site.query("select status, status_reason from runs_run where id = ?", (fork,))[0]
    assert status == "succeeded", (reason, site.worker_log(state_dir))
    (question,) = site.query("select source, text, status from runs_question where run_id = ?", (fork,))
    assert question == ("human", "Which loop order walks memory contiguously?", "approved")
    kinds = [k for (k,) in site.query("select kind from runs_step where run_id = ? order by seq", (fork,))]
    assert kinds[0] == "status" and "decision_point" not in kinds[: kinds.index("question_decided")]
    assert site.query("select parent_id, fork_seq from runs_run where id = ?", (fork,))[0] == (parent, seq)
