"""The optional webhook: a JSON POST to `KSEEK_WEBHOOK_URL` when a run waits for review, succeeds or fails.

The body is Slack-compatible (a top-level `text`) and carries the fields a script reads: `event`
("waiting_review", "succeeded", "failed"), `run_id`, `run_url`, `task`, `status`, and `question` (its text)
for a review. `run_url` is absolute when `KSEEK_SITE_URL` is set, a path otherwise.

`text` is Slack's markup, and what goes into it from a run (a question the model wrote, a failure's reason a
worker sent) is escaped as Slack asks (&, <, > as entities): otherwise a question reading `<!channel>` would ping
a whole channel, and `<https://elsewhere|the run>` would be a link that looks like ours. The plain fields
(`question`, `task`) keep the text as it is, for scripts.

A notice is queued only after the transaction that made the change commits (a rollback sends nothing), and
it is sent by one background thread: the event path only puts it on a bounded queue, so a slow or dead
receiver never slows event storage. The sender tries a few times with backoff, then logs that it gave up;
when the queue is full a notice is dropped, with a log line, rather than waiting.
"""

import json
import logging
import queue
import threading
import time
import urllib.request

from django.conf import settings
from django.db import transaction
from django.urls import reverse

log = logging.getLogger(__name__)

WAITING_REVIEW = "waiting_review"
SUCCEEDED = "succeeded"
FAILED = "failed"

QUEUE_MAX = 200
TIMEOUT_S = 5.0  # per attempt
ATTEMPTS = 3
BACKOFF_S = 1.0  # doubled after each failed attempt

_HEADLINES = {
    WAITING_REVIEW: "Run {run_id} ({task}) waits for review: {question}",
    SUCCEEDED: "Run {run_id} ({task}) succeeded",
    FAILED: "Run {run_id} ({task}) failed",
}

_queue: queue.Queue = queue.Queue(maxsize=QUEUE_MAX)
_thread: threading.Thread | None = None
_thread_lock = threading.Lock()


def webhook_url() -> str:
    return getattr(settings, "KSEEK_WEBHOOK_URL", "") or ""


def run_url(run_id: int) -> str:
    path = reverse("run_detail", args=[run_id])
    site = (getattr(settings, "KSEEK_SITE_URL", "") or "").rstrip("/")
    return site + path


def slack_escaped(text: str) -> str:
    """`text` shown as itself in Slack's markup: its control characters &, < and > as the entities Slack reads."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def notice(event: str, run, *, question=None) -> dict:
    """The webhook's JSON body for `event` on `run` (a Run with its task loaded)."""
    body = {
        "event": event,
        "run_id": run.pk,
        "run_url": run_url(run.pk),
        "task": run.task.name,
        "status": run.status,
    }
    if question is not None:
        body["question"] = question.text
        body["question_id"] = question.pk
    headline = _HEADLINES[event].format(
        run_id=run.pk, task=slack_escaped(run.task.name), question=slack_escaped(body.get("question", ""))
    )
    if run.status_reason and event == FAILED:
        headline += f" ({slack_escaped(run.status_reason)})"
    body["text"] = f"{headline} <{body['run_url']}>"
    return body


def notify_after_commit(event: str, run, *, question=None) -> None:
    """Queue the notice for sending once the current transaction commits; nothing when no webhook is set."""
    if not webhook_url():
        return
    body = notice(event, run, question=question)
    transaction.on_commit(lambda: enqueue(body))


def enqueue(body: dict) -> None:
    url = webhook_url()
    if not url:
        return
    _ensure_sender()
    try:
        _queue.put_nowait((url, body))
    except queue.Full:
        log.warning("webhook: queue full (%s notices), dropped %s for run %s", QUEUE_MAX, body["event"], body["run_id"])


def _ensure_sender() -> None:
    global _thread
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_send_loop, name="kseek-webhook", daemon=True)
            _thread.start()


def _send_loop() -> None:
    while True:
        url, body = _queue.get()
        try:
            deliver(url, body)
        finally:
            _queue.task_done()


def deliver(url: str, body: dict) -> bool:
    """POST `body` to `url`, retrying with backoff; True when a 2xx came back, False (logged) when it gave up."""
    data = json.dumps(body).encode()
    delay = BACKOFF_S
    error = ""
    for attempt in range(1, ATTEMPTS + 1):
        request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                if 200 <= response.status < 300:
                    return True
                error = f"HTTP {response.status}"
        except Exception as failed:
            error = f"{type(failed).__name__}: {failed}"
        if attempt < ATTEMPTS:
            time.sleep(delay)
            delay *= 2
    log.warning(
        "webhook: gave up on %s for run %s after %s attempts: %s", body["event"], body["run_id"], ATTEMPTS, error
    )
    return False


def wait_until_sent(timeout_s: float = 30.0) -> bool:
    """Block until every queued notice was delivered or given up (for tests and shutdown); False on timeout."""
    deadline = time.monotonic() + timeout_s
    while _queue.unfinished_tasks:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
