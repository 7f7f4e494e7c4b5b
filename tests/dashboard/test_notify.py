"""Notifications: the webhook (runs/notify.py) against a real local HTTP receiver, the "waiting on you" list and
the queue that leaves out finished runs' questions, and the review page's opt-in browser notification."""

import itertools
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import transaction
from django.urls import reverse

from runs import notify
from runs.models import QuestionSource, ReviewMode, RunStatus
from runs.review.selectors import runs_waiting_on_review
from runs.selectors import questions_pending, questions_pending_count
from runs.services import question_propose, run_claim, run_set_status
from runs.services.worker_events import worker_events_record
from tests.dashboard import test_browser as browser
from tests.dashboard.helpers import event, make_user, make_worker, question_payload
from tests.dashboard.test_browser import ScriptedWorker, start_run_from_page
from tests.foundation.factories import make_run
from tests.live_server import free_port

SITE = "https://kseek.example.org"
# The browser tests' fixtures (a live daphne server, chromium, a signed-in page), used by name.
chromium, live_site, login = browser.chromium, browser.live_site, browser.login


class Receiver:
    """A local HTTP server that records every JSON body POSTed to it, answering after `delay_s`."""

    def __init__(self, delay_s: float = 0.0):
        self.bodies: list[dict] = []
        self.attempts = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                receiver.attempts += 1
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                time.sleep(delay_s)
                receiver.bodies.append(body)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False  # a slow handler still sleeping must not hold the test's end
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def start(delay_s: float = 0.0) -> Receiver:
        made.append(Receiver(delay_s))
        return made[-1]

    yield start
    for one in made:
        one.close()


@pytest.fixture(autouse=True)
def _quiet_sender():
    """Each test starts and ends with nothing left to send (a previous test's retries would count here)."""
    assert notify.wait_until_sent(30)
    yield
    assert notify.wait_until_sent(30)


_host_names = itertools.count()


def held_run(**fields):
    """A run that a new worker host claimed (so that it is running and its events are taken)."""
    worker, _ = make_worker(f"gpu-{next(_host_names)}")
    run = make_run(**fields)
    assert run_claim(worker=worker).pk == run.pk
    run.refresh_from_db()
    return worker, run


@pytest.mark.django_db(transaction=True)
def test_the_webhook_receives_waiting_for_review_succeeded_and_failed_as_slack_compatible_json(receiver, settings):
    hook = receiver()
    settings.KSEEK_WEBHOOK_URL = hook.url
    settings.KSEEK_SITE_URL = SITE
    _, reviewed = held_run(review_mode=ReviewMode.REVIEW)
    question = question_propose(run=reviewed, text="Which loop order is contiguous?", source=QuestionSource.SELF)
    run_set_status(run=reviewed, status=RunStatus.SUCCEEDED)
    _, failing = held_run(review_mode=ReviewMode.AUTO)
    question_propose(run=failing, text="Asked and approved by itself", source=QuestionSource.SELF)  # auto: no one
    run_set_status(run=failing, status=RunStatus.FAILED, reason="budget_cost: spent")
    run_set_status(run=failing, status=RunStatus.FAILED, reason="budget_cost: spent")  # no transition: no notice
    assert notify.wait_until_sent(30)

    assert [(body["event"], body["run_id"]) for body in hook.bodies] == [
        ("waiting_review", reviewed.pk),
        ("succeeded", reviewed.pk),
        ("failed", failing.pk),
    ]
    waiting, succeeded, failed = hook.bodies
    task = reviewed.task.name
    assert waiting == {
        "event": "waiting_review",
        "run_id": reviewed.pk,
        "run_url": f"{SITE}/runs/{reviewed.pk}/",
        "task": task,
        "status": reviewed.status,
        "question": "Which loop order is contiguous?",
        "question_id": question.pk,
        "text": f"Run {reviewed.pk} ({task}) waits for review: Which loop order is contiguous? "
        f"<{SITE}/runs/{reviewed.pk}/>",
    }
    assert succeeded["status"] == "succeeded" and succeeded["text"].startswith(f"Run {reviewed.pk} ({task}) succeeded")
    assert "question" not in succeeded
    assert failed["status"] == "failed" and "failed (budget_cost: spent)" in failed["text"]
    assert reverse("run_detail", args=[reviewed.pk]) == f"/runs/{reviewed.pk}/"


@pytest.mark.django_db(transaction=True)
def test_a_runs_own_words_reach_slack_as_text_never_as_mentions_or_links(receiver, settings):
    # A question is the model's text and a failure's reason the worker's: in Slack's markup `<!channel>` pings a
    # whole channel and `<URL|words>` is a link under any words. Both arrive as text; the plain fields keep them.
    hook = receiver()
    settings.KSEEK_WEBHOOK_URL = hook.url
    settings.KSEEK_SITE_URL = SITE
    _, reviewed = held_run(review_mode=ReviewMode.REVIEW)
    asked = "<!channel> approve me at <https://elsewhere.example/x|the run page> & go"
    question_propose(run=reviewed, text=asked, source=QuestionSource.SELF)
    run_set_status(run=reviewed, status=RunStatus.FAILED, reason="<@U123> <!here> broke")
    assert notify.wait_until_sent(30)

    waiting, failed = hook.bodies
    assert waiting["question"] == asked
    assert waiting["text"] == (
        f"Run {reviewed.pk} ({reviewed.task.name}) waits for review: &lt;!channel&gt; approve me at "
        f"&lt;https://elsewhere.example/x|the run page&gt; &amp; go <{SITE}/runs/{reviewed.pk}/>"
    )
    assert failed["text"].endswith(f"failed (&lt;@U123&gt; &lt;!here&gt; broke) <{SITE}/runs/{reviewed.pk}/>")
    assert [text.count("<") for text in (waiting["text"], failed["text"])] == [1, 1]  # our link's, alone


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_change_and_a_site_without_the_setting_send_nothing(receiver, settings):
    hook = receiver()
    settings.KSEEK_WEBHOOK_URL = hook.url
    _, run = held_run()
    with pytest.raises(RuntimeError), transaction.atomic():
        question_propose(run=run, text="Taken back", source=QuestionSource.SELF)
        raise RuntimeError("rollback")
    settings.KSEEK_WEBHOOK_URL = ""
    question_propose(run=run, text="Nobody is told", source=QuestionSource.SELF)
    run_set_status(run=run, status=RunStatus.FAILED)
    assert notify.wait_until_sent(30)
    time.sleep(0.3)
    assert hook.attempts == 0 and hook.bodies == []


@pytest.mark.django_db
def test_the_pages_are_told_which_new_questions_wait_on_a_reviewer(monkeypatch):
    """The review page notifies only of `needs_review` questions: not an auto-approved run's, not a person's."""
    from runs.services import questions

    told = []
    monkeypatch.setattr(questions, "publish_after_commit", lambda run_id, message, **kw: told.append(message))
    _, reviewed = held_run(review_mode=ReviewMode.REVIEW)
    _, auto = held_run(review_mode=ReviewMode.AUTO)
    question_propose(run=reviewed, text="Waits?", source=QuestionSource.SELF)
    question_propose(run=auto, text="Approved by itself", source=QuestionSource.SELF)
    question_propose(run=reviewed, text="Written by a reviewer", source=QuestionSource.HUMAN)
    assert [(m["run_id"], m["needs_review"]) for m in told if m["status"] == "proposed"] == [
        (reviewed.pk, True),
        (auto.pk, False),
        (reviewed.pk, False),
    ]


def _batch_time(worker, run) -> float:
    """Seconds one event batch (a question and the run failing) takes through the worker sockets' store."""
    items = [
        (worker, event(run.pk, 0, "question_proposed", question_payload("q-1"))),
        (worker, event(run.pk, 1, "status", {"status": "failed", "reason": "crashed"})),
    ]
    started = time.monotonic()
    outcomes = worker_events_record(items=items)
    elapsed = time.monotonic() - started
    assert [outcome.stored for outcome in outcomes] == [True, True]
    return elapsed


@pytest.mark.django_db(transaction=True)
def test_a_slow_receiver_does_not_slow_event_storage_and_is_retried_then_given_up(
    receiver, settings, monkeypatch, caplog
):
    hook = receiver(delay_s=5.0)
    settings.KSEEK_WEBHOOK_URL = hook.url
    # Sent from the event path itself, two notices would take 2 x 2 attempts x 2 s: well over the bound below.
    monkeypatch.setattr(notify, "TIMEOUT_S", 2.0)
    monkeypatch.setattr(notify, "ATTEMPTS", 2)
    monkeypatch.setattr(notify, "BACKOFF_S", 0.05)
    worker, run = held_run(review_mode=ReviewMode.REVIEW)
    with caplog.at_level(logging.WARNING, logger="runs.notify"):
        elapsed = _batch_time(worker, run)
        assert elapsed < 1.5, f"a batch took {elapsed:.2f} s with a receiver that answers after 5 s"
        assert notify.wait_until_sent(30)
    assert hook.attempts == 4  # two notices, each tried twice
    gave_up = [r.getMessage() for r in caplog.records if "gave up" in r.getMessage()]
    assert len(gave_up) == 2 and "waiting_review" in gave_up[0] and "TimeoutError" in gave_up[0]
    assert "failed" in gave_up[1]


@pytest.mark.django_db(transaction=True)
def test_a_dead_receiver_does_not_slow_event_storage_and_is_retried_then_given_up(settings, monkeypatch, caplog):
    settings.KSEEK_WEBHOOK_URL = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens: connection refused
    monkeypatch.setattr(notify, "BACKOFF_S", 0.4)  # 3 attempts: 0.4 + 0.8 s of backoff per notice
    attempts = []
    real_urlopen = notify.urllib.request.urlopen
    monkeypatch.setattr(notify.urllib.request, "urlopen", lambda *a, **k: attempts.append(1) or real_urlopen(*a, **k))
    worker, run = held_run(review_mode=ReviewMode.REVIEW_TIMEOUT, review_timeout_s=60)
    with caplog.at_level(logging.WARNING, logger="runs.notify"):
        elapsed = _batch_time(worker, run)
        assert elapsed < 1.0, f"a batch took {elapsed:.2f} s with a dead receiver (2.4 s of retries)"
        assert notify.wait_until_sent(30)
    assert len(attempts) == 6
    gave_up = [r.getMessage() for r in caplog.records if "gave up" in r.getMessage()]
    assert len(gave_up) == 2 and all("after 3 attempts" in line and "refused" in line.lower() for line in gave_up)


@pytest.mark.django_db
def test_a_finished_runs_questions_leave_the_queue_the_badge_and_the_waiting_list(client):
    _, waiting = held_run()
    _, stopped = held_run()
    for run, text in ((waiting, "Still open?"), (stopped, "Of a stopped run?"), (waiting, "A second one?")):
        question_propose(run=run, text=text, source=QuestionSource.SELF)
    run_set_status(run=stopped, status=RunStatus.STOPPED)

    assert [q.text for q in questions_pending()] == ["Still open?", "A second one?"]
    assert questions_pending_count() == 2
    rows = runs_waiting_on_review()
    assert [(row["run"].pk, row["waiting"]) for row in rows] == [(waiting.pk, 2)]

    client.force_login(make_user("rita", "reviewer"))
    page = client.get(reverse("review_queue")).content.decode()
    assert "Waiting on you" in page and f'<tr data-run="{waiting.pk}">' in page
    assert f'<tr data-run="{stopped.pk}">' not in page and "Of a stopped run?" not in page
    assert '<span id="pending-count" class="badge badge-on" title="questions waiting for a decision">2</span>' in page
    assert client.get(reverse("pending_count")).json() == {"pending": 2}


# The opt-in browser notification, in a real browser against a live server (tests/dashboard/test_browser.py).
# window.Notification is wrapped by an init script so that the test sees every notification the page shows;
# the permission itself is the browser's, granted to the site in the context.
RECORD_NOTIFICATIONS = """
(() => {
  const Real = window.Notification;
  window.__notifications = [];
  window.__tabHidden = false;
  Object.defineProperty(Document.prototype, "hidden", {configurable: true, get: () => window.__tabHidden});
  class Recording {
    constructor(title, options) { window.__notifications.push({title, body: (options || {}).body}); }
    close() {}
    static get permission() { return Real.permission; }
    static requestPermission() { return Real.requestPermission(); }
  }
  window.Notification = Recording;
})();
"""


def signed_in_reviewer(context, live_site):
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(live_site["base"] + "/accounts/login/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", live_site["password"])
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Runs')")
    page.goto(live_site["base"] + "/review/")
    return page


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_a_hidden_review_tab_shows_a_browser_notification_when_a_question_arrives(live_site, chromium, login):
    operator = login("olga")
    run_id = start_run_from_page(operator, "openai:review-demo")
    worker = ScriptedWorker(live_site)
    context = chromium.new_context()
    try:
        assert worker.claim()["id"] == run_id
        context.grant_permissions(["notifications"], origin=live_site["base"])
        context.add_init_script(RECORD_NOTIFICATIONS)
        reviewer = signed_in_reviewer(context, live_site)
        reviewer.wait_for_selector("#live-state.live-on")
        reviewer.wait_for_selector("#notify-state:has-text('Notifications on')")
        assert reviewer.is_hidden("#notify-button")  # already allowed: nothing to ask

        worker.event(run_id, 0, "question_proposed", question_payload("q-seen", "Seen on the page?"))
        reviewer.wait_for_selector(".review-item:has-text('Seen on the page?')")
        reviewer.wait_for_selector(f"#waiting-on-you tr[data-run='{run_id}']")
        assert reviewer.evaluate("window.__notifications") == []  # the tab was visible: no notification

        reviewer.evaluate("window.__tabHidden = true")
        worker.event(run_id, 1, "question_proposed", question_payload("q-away", "Asked while away?"))
        reviewer.wait_for_function("window.__notifications.length === 1")
        shown = reviewer.evaluate("window.__notifications")[0]
        assert shown["title"] == "KernelSeek: a question waits for review"
        assert f"Run {run_id} proposed question" in shown["body"]
    finally:
        context.close()
        worker.close()


@pytest.mark.browser
@pytest.mark.timeout(300)
def test_the_notify_button_asks_the_browser_for_permission(live_site, chromium):
    context = chromium.new_context()
    try:
        context.add_init_script(
            "window.__asked = 0; const ask = Notification.requestPermission.bind(Notification);"
            "Notification.requestPermission = () => { window.__asked += 1; return ask(); };"
        )
        page = signed_in_reviewer(context, live_site)
        page.click("#notify-button")  # visible: the site was neither allowed nor blocked
        page.wait_for_function("window.__asked === 1")
    finally:
        context.close()


@pytest.mark.django_db(transaction=True)
def test_a_run_failed_because_its_worker_came_back_without_it_is_notified(receiver, settings):
    from runs.services import worker_runs_reconcile

    hook = receiver()
    settings.KSEEK_WEBHOOK_URL = hook.url
    worker, run = held_run()
    [outcome] = worker_events_record(items=[(worker, event(run.pk, 0, "note", {"text": "started", "level": "info"}))])
    assert outcome.stored
    assert worker_runs_reconcile(worker=worker, active_run_ids=set()) == {run.pk: RunStatus.FAILED}
    assert notify.wait_until_sent(30)
    assert [(body["event"], body["run_id"]) for body in hook.bodies] == [("failed", run.pk)]
    assert "reconnected without this run" in hook.bodies[0]["text"]
