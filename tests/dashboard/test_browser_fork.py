"""Forking in a real browser: an operator imports the demo trace, presses "Fork here" on its question step in the
run page's feed, keeps the veto, starts the fork, and lands on the fork's page, which shows its parent and the
fork step; the parent's page lists the fork. Same live server as tests/dashboard/test_browser.py (its own
instance for this module)."""

import json
from pathlib import Path

import pytest

from tests.dashboard import test_browser as browser

chromium, live_site, login = browser.chromium, browser.live_site, browser.login

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

DEMO = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"
EVENTS = [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]
QUESTION = next(e for e in EVENTS if e["kind"] == "question_proposed")


def test_an_operator_forks_at_a_question_with_a_veto_from_the_run_page(live_site, login):
    page = login("olga")
    page.goto(live_site["base"] + "/traces/import/")
    page.set_input_files("input[type=file]", str(DEMO))
    page.click("form[enctype='multipart/form-data'] button")
    page.wait_for_selector("#run-page")
    parent = int(page.get_attribute("#run-page", "data-run"))
    seq = QUESTION["seq"]
    page.click(f"#step-{seq} .fork-here")
    page.wait_for_selector("#fork-form")
    assert page.inner_text("#fork-question") == QUESTION["payload"]["text"]
    assert page.is_checked("#fork-decision input[value=veto]")
    page.click("#fork-button")
    page.wait_for_selector("#run-parent")
    fork = int(page.get_attribute("#run-page", "data-run"))
    assert fork != parent
    shown = page.inner_text("#run-parent")
    assert f"run {parent} at step #{seq}" in shown and "vetoed by olga" in shown
    assert page.get_attribute("#compare-parent", "href").endswith(f"?runs={parent},{fork}")
    page.click(f"#run-parent a[href$='#step-{seq}']")
    page.wait_for_selector("#run-forks")
    assert f"run {fork}" in page.inner_text("#run-forks")
    page.click("#compare-forks")
    page.wait_for_selector("#compare-chart[data-runs='2']")
