"""Pages that show the truth: controls only where they work, a 403 that says why, a queued run that says what
it waits for."""

import pytest
from django.urls import reverse

from runs.services import (
    question_propose,
    run_claim,
    run_control,
    run_set_status,
    worker_connected,
    worker_host_revoke,
)
from tests.dashboard.helpers import make_user, make_worker
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client):
    client.force_login(make_user("olga", "operator"))
    return client


def page(client, run) -> str:
    response = client.get(reverse("run_detail", args=[run.pk]))
    assert response.status_code == 200
    return response.content.decode()


def held_run(gpus=("NVIDIA H200",), name="gpu-a"):
    host, _ = make_worker(name)
    if list(gpus) != host.gpus:
        host.gpus = list(gpus)
        host.save()
    make_run()
    return host, run_claim(worker=host)


def test_a_finished_run_shows_no_pause_resume_or_stop(operator):
    _, run = held_run()
    running = page(operator, run)
    assert 'id="btn-stop"' in running and 'id="btn-pause"' in running
    assert 'id="btn-resume" hidden>' in running  # a running run cannot be resumed
    run_set_status(run=run, status="succeeded")
    finished = page(operator, run)
    assert "btn-pause" not in finished and "btn-resume" not in finished and "btn-stop" not in finished


def test_stopping_a_finished_run_says_it_cannot_be_stopped(operator):
    _, run = held_run()
    run_set_status(run=run, status="failed", reason="model error")
    response = operator.post(
        reverse("run_control", args=[run.pk]), {"action": "stop"}, headers={"accept": "application/json"}
    )
    assert response.status_code == 409
    assert "cannot be stopped" in response.json()["message"] and "stopd" not in response.json()["message"]
    with pytest.raises(Exception, match="cannot be paused"):
        run_control(run=run, action="pause")


def test_a_viewer_sees_the_question_but_no_decide_buttons(client):
    _, run = held_run()
    question_propose(
        run=run, text="What limits the kernel now?", source="self", category="limit", decision_point="plateau"
    )
    client.force_login(make_user("vera"))
    for name in ("review_queue", "review_items"):
        html = client.get(reverse(name)).content.decode()
        assert "What limits the kernel now?" in html
        assert 'value="approve"' not in html and 'value="veto"' not in html
    client.force_login(make_user("rita", "reviewer"))
    assert 'value="approve"' in client.get(reverse("review_queue")).content.decode()


def test_the_403_page_has_the_navigation_and_names_the_role_needed(client):
    client.force_login(make_user("vera"))
    response = client.get(reverse("workers"))
    assert response.status_code == 403
    html = response.content.decode()
    assert 'class="topbar"' in html and reverse("review_queue") in html  # the site's navigation
    assert "this needs the operator role" in html
    assert "with the role viewer" in html


def test_a_failed_run_says_why_in_its_header(operator):
    _, run = held_run()
    run_set_status(run=run, status="failed", reason="the model's API refused the key")
    assert "(the model&#x27;s API refused the key)" in page(operator, run)
    _, other = held_run(name="gpu-b")
    run_set_status(run=other, status="failed")
    assert "(no reason recorded)" in page(operator, other)


def queue_reason(client, run) -> str:
    html = page(client, run)
    start = html.index('id="run-queue-reason"')
    return html[html.index(">", start) + 1 : html.index("</dd>", start)]


def test_a_queued_run_says_why_no_worker_takes_it(operator):
    run = make_run()
    assert "no worker host has a token yet" in queue_reason(operator, run)
    host, _ = make_worker("gpu-a")
    assert "no worker is online" in queue_reason(operator, run) and "gpu-a" in queue_reason(operator, run)
    worker_connected(worker=host, connection="chan-1")
    assert "takes the run at its next claim" in queue_reason(operator, run)
    # Its one GPU is taken by this run's elder: the host has no free slot.
    taken = run_claim(worker=host)
    assert taken.pk == run.pk
    waiting = make_run()
    assert f"all 1 slot(s) of the connected workers that serve cpu are busy: runs #{run.pk} hold them" in queue_reason(
        operator, waiting
    )
    third = make_run()
    assert "busy" in queue_reason(operator, third)
    run_set_status(run=run, status="succeeded")
    assert "1 queued run(s) are ahead of it" in queue_reason(operator, third)
    worker_host_revoke(host=host)
    assert "no worker host has a token yet" in queue_reason(operator, third)
    # A run a worker holds has no queue reason.
    assert 'id="run-queue-reason" class="queue-reason" hidden' in page(operator, run)
