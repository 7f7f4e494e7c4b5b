"""The dashboard in a real browser (Debian's chromium through Playwright) against a live daphne server.

A scripted worker speaks docs/protocol.md over a real websocket, so these cover the whole path: a page action,
the server, the worker socket, and back to the page. They fail rather than skip when KSEEK_REQUIRE_BROWSER=1
(CI) and chromium is missing.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kseek_site.serving import daphne_argv
from tests.live_server import free_port, serving
from tests.reliability.live import copy_sqlite_database

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    path = os.environ.get("KSEEK_CHROMIUM", "/usr/bin/chromium")
    if shutil.which(path) or os.access(path, os.X_OK):
        return path
    message = f"chromium not found at {path} (apt-get install -y chromium, or set KSEEK_CHROMIUM)"
    if os.environ.get("KSEEK_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


def live_site_env(data_dir: Path) -> dict:
    """The environment of the browser tests' site: a SQLite database in `data_dir` and the in-memory channel layer,
    whatever DATABASE_URL and REDIS_URL this process has (tests/conftest.py's second pass relies on that)."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG"}}
    # An OpenAI-compatible server's address, as a site whose workers reach one has: the start form then takes the
    # `openai:NAME` models these tests start (their runs are played by a ScriptedWorker; no model is ever called).
    env.update(KSEEK_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT), OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    return env


# The migrated and seeded database of this process's first browser site, and what its seed printed. Each module's
# site starts from a copy: the migrations and the seed (two Django starts, a 12,000-step import) cost some 10 s a
# module on CI's machine, a copy of the 2.5 MB file a few milliseconds (docs/testing.md, "CI time").
_seeded: dict = {}


def seeded_database(tmp_path_factory) -> tuple[Path, dict]:
    if not _seeded:
        data = tmp_path_factory.mktemp("live-template") / "data"
        env, python = live_site_env(data), sys.executable
        subprocess.run(
            [python, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True
        )
        seeded = subprocess.run(
            [python, "tests/dashboard/live_seed.py"], cwd=ROOT, env=env, check=True, capture_output=True, text=True
        )
        _seeded.update(path=data / "kernelseek.sqlite3", seed=json.loads(seeded.stdout.strip().splitlines()[-1]))
    return _seeded["path"], _seeded["seed"]


def copy_database(source: Path, data_dir: Path) -> None:
    """The database alone into a new data folder (as `LiveSite`'s template copy): the secret key is not copied, so
    each site makes its own."""
    data_dir.mkdir(mode=0o700)
    copy_sqlite_database(source, data_dir / "kernelseek.sqlite3")


@pytest.fixture(scope="module")
def live_site(tmp_path_factory):
    """A SQLite data folder, migrated and seeded (a copy of this process's first), served by daphne with the
    in-memory channel layer."""
    data = tmp_path_factory.mktemp("live")
    database, seed = seeded_database(tmp_path_factory)
    copy_database(database, data / "data")
    env = live_site_env(data / "data")
    port = free_port()
    with serving(
        daphne_argv("127.0.0.1", port), port=port, env=env, log_path=data / "daphne.log", timeout_s=60
    ) as base:
        yield {"base": base, "ws": f"ws://127.0.0.1:{port}", **seed}


@pytest.fixture(scope="module")
def chromium():
    path = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def login(chromium, live_site):
    contexts = []

    def sign_in(username: str):
        context = chromium.new_context()
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(live_site["base"] + "/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", live_site["password"])
        page.click("button[type=submit]")
        page.wait_for_selector("h1:has-text('Runs')")
        return page

    yield sign_in
    for context in contexts:
        context.close()


class ScriptedWorker:
    """A worker that says exactly what a test tells it to, over the real protocol."""

    def __init__(self, live_site):
        from websockets.sync.client import connect

        # Entered by hand: the connection lives across a test's steps and is closed by close().
        self._opened = connect(
            live_site["ws"] + "/ws/worker/", additional_headers={"Authorization": f"Bearer {live_site['token']}"}
        )
        self.connection = self._opened.__enter__()
        self.directives = []
        self.send(
            {
                "type": "hello",
                "host": "live-worker",
                "gpus": ["cpu"],
                "targets": ["cpu"],
                "active_runs": [],
                "agentloop_version": "test",
            }
        )
        assert self.receive()["type"] == "welcome"

    def send(self, message: dict) -> None:
        self.connection.send(json.dumps({"v": 1, **message}))

    def receive(self, timeout: float = 15) -> dict:
        while True:
            message = json.loads(self.connection.recv(timeout=timeout))
            if message["type"] != "directive":
                return message
            self.directives.append(message)

    def claim(self) -> dict:
        self.send({"type": "claim", "gpu": 0})
        reply = self.receive()
        assert reply["type"] == "assign", reply
        return reply["run"]

    def event(self, run_id: int, seq: int, kind: str, payload: dict) -> None:
        # a count or a cost only on a usage event, repeating its payload's (docs/protocol.md 1.1)
        counted = {name: payload[name] for name in ("tokens_in", "tokens_out", "cost_usd")} if kind == "usage" else {}
        self.send(
            {
                "type": "event",
                "run_id": run_id,
                "seq": seq,
                "kind": kind,
                "ts": "2026-11-30T12:00:00+00:00",
                "payload": payload,
                "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0} | counted,
            }
        )
        reply = self.receive()
        assert reply == {"type": "ack", "v": 1, "run_id": run_id, "seq": seq}, reply

    def directive(self, action: str, timeout: float = 15) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            found = next((d for d in self.directives if d["action"] == action), None)
            if found:
                self.send({"type": "directive_ack", "id": found["id"]})
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {action} directive arrived; got {self.directives}")
            try:
                message = json.loads(self.connection.recv(timeout=remaining))
            except TimeoutError:
                continue
            if message["type"] == "directive":
                self.directives.append(message)

    def close(self):
        self._opened.__exit__(None, None, None)


def start_run_from_page(page, model: str, review_mode: str = "review") -> int:
    page.click("#start-run-link")  # the start form has its own page, linked above the runs list
    form = "#start-run "
    page.select_option(form + "select[name=task]", "matmul_cpu")
    page.fill(form + "input[name=model]", model)
    page.select_option(form + "select[name=review_mode]", review_mode)
    page.fill(form + "input[name=budget_steps]", "100")
    page.click("#start-run-button")
    page.wait_for_selector("#run-page")
    return int(page.get_attribute("#run-page", "data-run"))


def eval_payload(speedup, correct=True, failing=None):
    scenarios = [
        {
            "id": sid,
            "params": {"n": n, "dtype": "float32"},
            "correct": correct and sid != failing,
            "time_ms": 1.0,
            "speedup": {"naive": speedup},
        }
        for sid, n in (("n256", 256), ("n512", 512))
    ]
    status = "correct" if correct and not failing else "incorrect"
    result = {
        "task": "matmul_cpu",
        "status": status,
        "kernel_source": f"// v{speedup}\n",
        "scenarios": scenarios,
        "geomean": {"naive": {"speedup": speedup if status == "correct" else None, "count": 2}},
    }
    return {
        "purpose": "tool",
        "scenario_set": "quick",
        "kernel_path": "kernel.cpp",
        "kernel_source": result["kernel_source"],
        "result": result,
        "speedup": speedup,
    }


def test_a_run_started_from_the_page_streams_steps_live_from_a_worker(live_site, login):
    page = login("olga")
    run_id = start_run_from_page(page, "openai:live-demo")
    page.wait_for_selector("#live-state.live-on")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        worker.event(run_id, 0, "status", {"status": "running", "reason": "started"})
        for seq in range(1, 6):
            worker.event(run_id, seq, "note", {"text": f"streamed note {seq}"})
            page.wait_for_selector(f"#step-{seq}:has-text('streamed note {seq}')")
        assert page.locator("#feed-list > li").count() == 6
        page.wait_for_selector("#run-status:has-text('Running')")
        page.wait_for_selector("#run-steps:has-text('6')")

        page.fill("#message-form textarea", "Try blocking the loops.")
        page.click("#message-form button[type=submit]")
        message = worker.directive("human_message")
        assert (
            message["run_id"] == run_id and message["text"] == "Try blocking the loops." and message["author"] == "olga"
        )

        page.click("#btn-pause")
        assert worker.directive("pause")["run_id"] == run_id
    finally:
        worker.close()


def test_a_run_page_says_so_at_once_when_the_host_holding_the_run_goes_offline(live_site, login):
    page = login("olga")
    run_id = start_run_from_page(page, "openai:offline-demo")
    page.wait_for_selector("#live-state.live-on")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        worker.event(run_id, 0, "status", {"status": "running", "reason": "started"})
        page.wait_for_selector("#run-worker:has-text('live-worker')")
        page.wait_for_selector("#run-worker-gpu:has-text('· gpu 0')")  # the GPU its claim named, live (issue 21)
        assert page.locator("#run-worker-offline").is_hidden()
    finally:
        worker.close()
    page.wait_for_selector("#run-worker-offline:visible", timeout=15_000)
    assert page.locator("#run-worker-offline").inner_text().startswith("offline since 20")


def test_a_reviewer_approves_a_question_with_the_keyboard_and_the_worker_receives_it(live_site, login):
    operator = login("olga")
    run_id = start_run_from_page(operator, "openai:review-demo")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        reviewer = login("rita")
        reviewer.goto(live_site["base"] + "/review/")
        reviewer.wait_for_selector("#live-state.live-on")
        worker.event(
            run_id,
            0,
            "question_proposed",
            {
                "question_ref": "q-live-0",
                "bank_key": "",
                "text": "Which loop order touches memory contiguously?",
                "category": "hypothesis",
                "reason": "three evaluations without gain",
                "decision_point": "plateau",
                "by": "model",
                "attempt": 0,
            },
        )
        reviewer.wait_for_selector(".review-item.selected:has-text('Which loop order')")
        reviewer.wait_for_selector("#pending-count:has-text('1')")
        reviewer.keyboard.press("?")
        reviewer.wait_for_selector("#review-help[open]")
        reviewer.keyboard.press("Escape")
        reviewer.keyboard.press("a")
        decision = worker.directive("question_decision")
        assert (decision["run_id"], decision["question_ref"], decision["decision"], decision["reviewer"]) == (
            run_id,
            "q-live-0",
            "approve",
            "rita",
        )
        reviewer.wait_for_selector(".review-item:has-text('Which loop order')", state="detached")
        reviewer.wait_for_selector("#pending-count:has-text('0')")
    finally:
        worker.close()


def propose(worker: ScriptedWorker, run_id: int, seq: int, ref: str, text: str) -> None:
    worker.event(
        run_id,
        seq,
        "question_proposed",
        {
            "question_ref": ref,
            "bank_key": "",
            "text": text,
            "category": "hypothesis",
            "reason": "three evaluations without gain",
            "decision_point": "plateau",
            "by": "model",
            "attempt": 0,
        },
    )


def review_item(word: str) -> str:
    """The queue item whose own question starts with `word` (an item's earlier steps quote the others)."""
    return f".review-item:has(blockquote:has-text('{word}:'))"


def take_decision(worker: ScriptedWorker) -> dict:
    decision = worker.directive("question_decision")
    worker.directives.remove(decision)  # the next call waits for the next decision
    return decision


def test_approve_after_an_edit_sends_the_edited_text_by_button_and_by_key(live_site, login):
    """Audit finding 9: a reviewer who changed the text and then pressed Approve lost the edit without a word."""
    operator = login("olga")
    run_id = start_run_from_page(operator, "openai:review-edit-demo")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        reviewer = login("rita")
        reviewer.goto(live_site["base"] + "/review/")
        reviewer.wait_for_selector("#live-state.live-on")
        for seq, word in enumerate(["Alpha", "Bravo", "Charlie"]):
            propose(worker, run_id, seq, f"q-{word}", f"{word}: which loop order touches memory contiguously?")
        for word in ["Alpha", "Bravo", "Charlie"]:
            reviewer.wait_for_selector(review_item(word))

        # The button: edit, then Approve, which now says it sends the reviewer's text.
        item = reviewer.locator(review_item("Alpha"))
        item.locator("button:has-text('Edit (e)')").click()
        item.locator("textarea").fill("Alpha: does blocking by 64 keep B in L1?")
        assert item.locator("button[value=approve]").inner_text() == "Approve my text (a)"
        item.locator("button[value=approve]").click()
        decision = take_decision(worker)
        assert (decision["question_ref"], decision["decision"], decision["text"]) == (
            "q-Alpha",
            "edit",
            "Alpha: does blocking by 64 keep B in L1?",
        )
        reviewer.wait_for_selector("#review-state:has-text('edited')")

        # The key: write my own (w), leave the editor for the item, press a: the reviewer's question is sent.
        reviewer.wait_for_selector(review_item("Alpha"), state="detached")
        item = reviewer.locator(review_item("Bravo"))
        item.locator("blockquote").click()
        reviewer.keyboard.press("w")
        reviewer.keyboard.type("Bravo: where does the inner loop stall?")
        item.locator("blockquote").click()
        reviewer.keyboard.press("a")
        decision = take_decision(worker)
        assert (decision["question_ref"], decision["decision"], decision["text"]) == (
            "q-Bravo",
            "replace",
            "Bravo: where does the inner loop stall?",
        )

        # Esc cancels an edit, saying so; a then approves the proposal as it was.
        reviewer.wait_for_selector(review_item("Bravo"), state="detached")
        item = reviewer.locator(review_item("Charlie"))
        item.locator("blockquote").click()
        reviewer.keyboard.press("e")
        reviewer.keyboard.type(" And vectorise?")
        reviewer.keyboard.press("Escape")
        reviewer.wait_for_selector("#review-state:has-text('Edit cancelled')")
        assert item.locator("button[value=approve]").inner_text() == "Approve (a)"
        reviewer.keyboard.press("a")
        decision = take_decision(worker)
        assert (decision["question_ref"], decision["decision"]) == ("q-Charlie", "approve")
        assert "text" not in decision or decision["text"] in (None, "")
    finally:
        worker.close()


def test_the_speedup_chart_draws_the_evaluations_and_updates_live(live_site, login):
    page = login("olga")
    run_id = start_run_from_page(page, "openai:chart-demo")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        worker.event(run_id, 0, "evaluation", eval_payload(1.25))
        worker.event(
            run_id,
            1,
            "question_proposed",
            {
                "question_ref": "q-c",
                "text": "Is the inner loop vectorised?",
                "category": "hypothesis",
                "decision_point": "plateau",
                "by": "model",
            },
        )
        worker.event(run_id, 2, "evaluation", eval_payload(None, correct=False))
        page.reload()
        page.wait_for_selector("#speedup-chart[data-points='2']")
        worker.event(run_id, 3, "evaluation", eval_payload(1.75))
        page.wait_for_selector("#speedup-chart[data-points='3']")
        drawn = page.evaluate("""() => {
            const data = document.getElementById('speedup-chart').data;
            const by = (meta) => data.find((t) => t.meta === meta) || {};
            return {correct: by('verified').y, failed: by('not-correct').x, best: by('best').y,
                    question: by('question').text.filter(t => t), legend: data.map((t) => t.name)};
        }""")
        assert drawn["correct"] == [1.25, 1.75] and drawn["failed"] == [2]
        assert "verified (full set, measured here)" in drawn["legend"]
        assert drawn["best"] == [1.25, 1.25, 1.75]
        assert drawn["question"] == ["Is the inner loop vectorised?"] * 2
        assert page.locator("#speedup-chart .scatterlayer .point").count() >= 3
        page.wait_for_selector("#run-best:has-text('1.750×')")
        # A new best whose interval holds 1.0: the header, redrawn live, says so as the server writes it.
        worker.event(run_id, 4, "evaluation", with_interval(eval_payload(2.0), 0.9, 3.0))
        page.wait_for_selector("#run-best:has-text('no difference (0.900–3.00×) (verified: full set)')")
        # The chart draws its interval as an error bar, and a quick-set point in its own marker and legend entry. The
        # header and the chart are redrawn apart: wait for the chart's fourth point before reading its bars.
        page.wait_for_selector("#speedup-chart[data-points='4']")
        bars = page.evaluate("""() => document.getElementById('speedup-chart').data
            .find((t) => t.meta === 'verified').error_y""")
        assert [round(v, 3) for v in bars["array"]][-1] == 1.0 and [round(v, 3) for v in bars["arrayminus"]][-1] == 1.1
        quick = eval_payload(1.5)
        quick["result"]["scenarios"] = quick["result"]["scenarios"][:1]
        worker.event(run_id, 5, "evaluation", quick)
        page.wait_for_selector("#speedup-chart[data-points='5']")
        style = page.evaluate("""() => { const t = document.getElementById('speedup-chart').data
            .find((t) => t.meta === 'quick'); return {name: t.name, symbol: t.marker.symbol, y: t.y}; }""")
        assert style == {"name": "quick set (not verified)", "symbol": "circle-open", "y": [1.5]}
        # The line of baselines too, redrawn from the live summary (Run.best_texts).
        page.wait_for_selector("#run-baselines:has-text('naive no difference (0.900–3.00×)')")
        # A correct evaluation whose verdict has no figure over the run's baseline: neither "not correct" nor a
        # speed-up, its own marker and legend entry.
        worker.event(run_id, 6, "evaluation", eval_payload(None))
        page.wait_for_selector("#speedup-chart[data-points='6']")
        unmeasured = page.evaluate("""() => { const data = document.getElementById('speedup-chart').data;
            const t = data.find((t) => t.meta === 'no-figure');
            return {x: t.x, name: t.name, failed: data.find((t) => t.meta === 'not-correct').x}; }""")
        assert unmeasured == {"x": [6], "name": "correct, no figure over naive", "failed": [2]}
    finally:
        worker.close()


def with_interval(payload: dict, low: float, high: float) -> dict:
    """The payload with the intervals the harness measures now: every scenario's speed-up within [low, high]."""
    for scenario in payload["result"]["scenarios"]:
        speedup = scenario["speedup"]["naive"]
        scenario.update(time_ci_ms=[1.0, 1.0], baseline_ms={"naive": speedup}, baseline_ci_ms={"naive": [low, high]})
    return payload


def test_a_12000_step_run_page_opens_on_its_last_page_and_scrolls_back(live_site, login):
    page = login("rita")
    page.goto(f"{live_site['base']}/runs/{live_site['big_run']}/")
    page.wait_for_selector("#step-11999:has-text('long-run note 11999')")
    assert page.locator("#feed-list > li").count() == 200
    page.eval_on_selector("#feed", "feed => { feed.scrollTop = 0; }")
    page.wait_for_selector("#step-11799")
    assert page.locator("#feed-list > li").count() == 400
    page.eval_on_selector("#feed", "feed => { feed.scrollTop = 0; }")
    page.wait_for_selector("#step-11599")
    # A permalink opens at its step, far from the tail.
    page.goto(f"{live_site['base']}/runs/{live_site['big_run']}/#step-42")
    page.wait_for_selector("#step-42.highlight")
    assert page.locator("#step-11999").count() == 0


def test_the_feed_keeps_a_bounded_window_of_steps(live_site, login):
    """Reading back past the limit drops the newest steps from the page; the newer button brings them back."""
    page = login("rita")
    page.goto(f"{live_site['base']}/runs/{live_site['big_run']}/")
    page.wait_for_selector("#step-11999")
    page.evaluate("KSeekRun.limit(300)")
    page.eval_on_selector("#feed", "feed => { feed.scrollTop = 0; }")
    page.wait_for_selector("#step-11799")
    assert page.evaluate("KSeekRun.held()") == 300
    assert page.evaluate("KSeekRun.range()") == [11600, 11899]  # the 100 newest left the page
    assert page.locator("#step-11999").count() == 0 and page.locator("#feed-list > li").count() == 300
    assert page.locator("#feed-newer").is_visible()
    page.click("#feed-newer")
    page.wait_for_selector("#step-11999")


def test_wrong_passwords_lock_the_login_with_a_page_saying_for_how_long(live_site, chromium, login):
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        for _ in range(20):
            page.goto(live_site["base"] + "/accounts/login/")
            page.fill("input[name=username]", "mallory")
            page.fill("input[name=password]", "guess-" + "x" * 8)
            page.click("button[type=submit]")
            if page.locator("h1:has-text('Login locked')").count():
                break
        locked = page.locator("#locked-out")
        assert "mallory" in locked.inner_text() and "locked for 15 minutes" in locked.inner_text()
        assert "axes_reset_username mallory" in page.inner_text("main")
    finally:
        context.close()
    login("olga")  # another user from the same address still gets in


def test_a_budget_too_large_is_refused_by_the_form_before_it_is_sent(live_site, login):
    page = login("olga")
    page.click("#start-run-link")
    field = "#start-run input[name=budget_steps]"
    page.select_option("#start-run select[name=task]", "matmul_cpu")
    page.fill(field, "99999999999999999999")
    page.click("#start-run-button")
    # The field carries its bounds (max="1000000"): the browser keeps the form and says why; the server refuses
    # the same value with a form error when a client sends it anyway (tests/dashboard/test_pages.py).
    assert page.get_attribute(field, "max") == "1000000"
    assert page.eval_on_selector(field, "el => el.validity.rangeOverflow") is True
    assert page.eval_on_selector(field, "el => el.validationMessage")
    assert page.locator("#run-page").count() == 0
