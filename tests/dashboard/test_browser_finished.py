"""What a finished run's pages offer, in a real browser (issue 34, items 6 and 9): no message to an agent that
has stopped, no banner that still says "queued" once the run has moved on, and a waiting question that leaves
the review queue when its run is stopped. Same live server as tests/dashboard/test_browser.py."""

import pytest

from tests.dashboard import test_browser as browser
from tests.dashboard.test_browser import ScriptedWorker

# The live server, the browser and the signed-in pages of tests/dashboard/test_browser.py.
chromium, live_site, login = browser.chromium, browser.live_site, browser.login

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

QUESTION = {
    "question_ref": "q-closed-0",
    "bank_key": "",
    "text": "Which loop order touches memory contiguously?",
    "category": "hypothesis",
    "reason": "three evaluations without gain",
    "decision_point": "plateau",
    "by": "model",
    "attempt": 0,
}


def test_the_demos_queued_banner_goes_when_it_runs_and_a_finished_run_takes_no_message(live_site, login):
    page = login("olga")
    page.click("#start-demo-button")
    page.wait_for_selector("#run-page")
    run_id = int(page.get_attribute("#run-page", "data-run"))
    banner = f".messages li:has-text('Demo run {run_id} is queued')"
    assert page.locator(banner).is_visible() and page.locator("#message-form").is_visible()
    page.wait_for_selector("#live-state.live-on")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        worker.event(run_id, 0, "status", {"status": "running", "reason": "started"})
        page.wait_for_selector("#run-status:has-text('Running')")
        page.wait_for_selector(banner, state="detached")  # it said "queued": no longer true
        assert page.locator("#message-form").is_visible()  # a running agent reads messages
        worker.event(run_id, 1, "status", {"status": "failed", "reason": "budget_steps"})
        page.wait_for_selector("#run-status:has-text('Failed')")
        page.wait_for_selector("#message-form", state="detached")
    finally:
        worker.close()
    page.reload()
    page.wait_for_selector("#run-status:has-text('Failed')")
    assert page.locator("#message-form").count() == 0 and page.locator(".messages").count() == 0


def test_an_imported_run_offers_no_message_to_the_agent(live_site, login):
    page = login("olga")
    page.goto(f"{live_site['base']}/runs/{live_site['big_run']}/")
    page.wait_for_selector("#run-imported")
    assert page.locator("#message-form").count() == 0
    assert page.get_by_role("button", name="Send").count() == 0


def test_a_waiting_question_leaves_the_review_queue_when_its_run_is_stopped(live_site, login):
    operator = login("olga")
    operator.click("#start-review-demo-button")
    operator.wait_for_selector("#run-page")
    run_id = int(operator.get_attribute("#run-page", "data-run"))
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        worker.event(run_id, 0, "status", {"status": "running", "reason": "started"})
        worker.event(run_id, 1, "question_proposed", QUESTION)
        reviewer = login("rita")
        reviewer.goto(live_site["base"] + "/review/")
        reviewer.wait_for_selector("#live-state.live-on")
        reviewer.wait_for_selector(".review-item:has-text('Which loop order')")
        reviewer.wait_for_selector("#pending-count:has-text('1')")

        operator.wait_for_selector("#btn-stop:visible")
        operator.click("#btn-stop")
        assert worker.directive("stop")["run_id"] == run_id
        reviewer.wait_for_selector(".review-item:has-text('Which loop order')", state="detached")
        reviewer.wait_for_selector("#pending-count:has-text('0')")
        reviewer.wait_for_selector("#review-empty")
        assert not any(d["action"] == "question_decision" for d in worker.directives)

        operator.wait_for_selector("#run-status:has-text('Stopped')")
        operator.reload()
        operator.wait_for_selector("#run-questions-closed:has-text('closed undecided')")
    finally:
        worker.close()
