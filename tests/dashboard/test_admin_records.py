"""The admin shows what the harness and the agent recorded and offers no way to forge it (issue 34, item 5): a
superuser sees runs, steps, questions, kernels and evaluations (each with its verdict), and is offered no add, change
or delete of any, on the pages or by a POST of their own."""

import pytest
from django.urls import reverse

from runs.models import Evaluation, Kernel, Question, Run, Step, Suite, SuiteProblem, SuiteStudy
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import evaluation_payload, event, make_user, make_worker, question_payload
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db

RECORDS = [Run, Step, Question, Kernel, Evaluation]


@pytest.fixture
def recorded():
    """A run as a worker records it: a question proposed, then a correct evaluation of a kernel."""
    host, _ = make_worker()
    make_run()
    run = run_claim(worker=host)
    for seq, (kind, payload) in enumerate(
        [("question_proposed", question_payload("q-1")), ("evaluation", evaluation_payload(1.5))]
    ):
        [outcome] = worker_events_record(items=[(host, event(run.pk, seq, kind, payload))])
        assert outcome.stored, outcome.error
    return {model: model.objects.first() for model in RECORDS}


@pytest.fixture
def superuser(client):
    client.force_login(make_user("root", is_superuser=True, is_staff=True))
    return client


def admin_url(model, action: str, *args) -> str:
    return reverse(f"admin:runs_{model._meta.model_name}_{action}", args=args)


@pytest.mark.parametrize("model", RECORDS, ids=lambda m: m.__name__)
def test_the_admin_lists_and_shows_a_record_but_offers_no_add_change_or_delete(superuser, recorded, model):
    record = recorded[model]
    listing = superuser.get(admin_url(model, "changelist"))
    assert listing.status_code == 200
    assert admin_url(model, "add") not in listing.content.decode()
    assert 'name="action"' not in listing.content.decode()  # no "delete selected" (nor any other bulk action)

    page = superuser.get(admin_url(model, "change", record.pk))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="_save"' not in html and admin_url(model, "delete", record.pk) not in html

    assert superuser.get(admin_url(model, "add")).status_code == 403
    assert superuser.get(admin_url(model, "delete", record.pk)).status_code == 403


@pytest.mark.parametrize("model", RECORDS, ids=lambda m: m.__name__)
def test_a_superusers_own_post_adds_changes_or_deletes_no_record(superuser, recorded, model):
    record = recorded[model]
    before = {m: list(m.objects.order_by("pk").values()) for m in RECORDS}
    assert superuser.post(admin_url(model, "add"), {}).status_code == 403
    forged = {"status": "succeeded", "best_speedup": "99", "text": "forged", "seq": "7", "correct": "on"}
    assert superuser.post(admin_url(model, "change", record.pk), forged).status_code == 403
    assert superuser.post(admin_url(model, "delete", record.pk), {"post": "yes"}).status_code == 403
    deleted = superuser.post(
        admin_url(model, "changelist"), {"action": "delete_selected", "_selected_action": [record.pk], "post": "yes"}
    )
    assert deleted.status_code in (200, 302)
    assert {m: list(m.objects.order_by("pk").values()) for m in RECORDS} == before


def test_an_evaluations_verdict_shows_with_its_scenarios_without_a_form(superuser, recorded):
    evaluation = recorded[Evaluation]
    html = superuser.get(admin_url(Evaluation, "change", evaluation.pk)).content.decode()
    assert len(evaluation.verdict["scenarios"]) == 2 and "n256" in html
    assert 'name="verdict"' not in html  # shown as text, not as a field to change


SUITE_RECORDS = [Suite, SuiteProblem, SuiteStudy]


@pytest.fixture
def suite_records():
    """A suite as sync_tasks stores it (one refused problem) and a suite study over it."""
    suite = Suite.objects.create(name="level_1", source="KernelBench level 1", manifest={"problems": []})
    problem = SuiteProblem.objects.create(suite=suite, position=0, file="1_x.py", outcome="refused", reason="hub")
    study = SuiteStudy.objects.create(suite=suite, setting="questions", values=["on", "off"])
    return {Suite: suite, SuiteProblem: problem, SuiteStudy: study}


@pytest.mark.parametrize("model", SUITE_RECORDS, ids=lambda m: m.__name__)
def test_suites_show_in_the_admin_with_no_add_change_or_delete(superuser, suite_records, model):
    record = suite_records[model]
    before = list(model.objects.order_by("pk").values())
    listing = superuser.get(admin_url(model, "changelist"))
    assert listing.status_code == 200 and admin_url(model, "add") not in listing.content.decode()
    assert superuser.get(admin_url(model, "change", record.pk)).status_code == 200
    assert superuser.post(admin_url(model, "add"), {}).status_code == 403
    assert (
        superuser.post(admin_url(model, "change", record.pk), {"name": "forged", "outcome": "imported"}).status_code
        == 403
    )
    assert superuser.post(admin_url(model, "delete", record.pk), {"post": "yes"}).status_code == 403
    assert list(model.objects.order_by("pk").values()) == before
