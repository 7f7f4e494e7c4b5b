"""The evidence view in a real browser: the baseline select recolours the grid, pointing at a cell shows its
scenario's details, and the table of every scenario stays folded. Same live server as test_browser.py; the
seeded evaluation is tests/dashboard/evidence_seed.py's 180 attention scenarios."""

import os

import pytest

from gpu_harness import figures
from tests.dashboard import test_browser as browser

chromium, live_site, login = browser.chromium, browser.live_site, browser.login

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

SCREENSHOT = os.environ.get("KSEEK_EVIDENCE_SCREENSHOT", "")  # e.g. /tmp/evidence.png, to look at the page


def test_the_evidence_grid_follows_the_baseline_select_and_shows_details_on_hover(live_site, login):
    page = login("olga")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{live_site['base']}/evaluations/{live_site['evidence_evaluation']}/")
    page.wait_for_selector("#evidence-grid")
    cells = page.locator("#evidence-grid td[data-scenario]")
    assert cells.count() == 180
    assert page.eval_on_selector("#evidence-baseline", "s => s.value") == "cudnn"
    assert page.locator("#scenario-table").get_attribute("open") is None  # folded
    assert not page.locator("#scenario-table table").is_visible()
    if SCREENSHOT:
        page.screenshot(path=SCREENSHOT, full_page=True)
    # A correct cell: its text is its speed-up over the chosen baseline, three significant digits.
    cell = page.locator("#evidence-grid td.cell:not(.tone-wrong):not(.tone-not-run)[data-scenario]").first
    sid = cell.get_attribute("data-scenario")
    before = cell.inner_text()
    page.select_option("#evidence-baseline", "fa4")
    after = cell.inner_text()
    assert after != before and after.endswith("×")
    assert page.locator("#evidence-spread tr.chosen").get_attribute("data-baseline") == "fa4"
    # The text the page shows is the figure's: compare against the title, which lists every baseline's.
    assert f"vs fa4 {after}" in cell.get_attribute("title")
    # Wrong cells stay wrong whatever the baseline.
    assert page.locator("#evidence-grid td.tone-wrong").count() == 3
    assert page.locator("#evidence-grid td.tone-not-run").count() == 4
    cell.hover()
    assert sid in page.inner_text("#evidence-hover") and "TFLOP/s" in page.inner_text("#evidence-hover")
    page.click("#scenario-table summary")
    assert page.locator("#scenario-table tr[data-scenario]").count() == 180
    assert figures.format_significant(0.002201252665921785) in page.inner_text("#scenario-table")


def test_the_run_pages_evaluations_table_gains_a_row_when_the_feed_announces_an_evaluation(live_site, login):
    from tests.dashboard.test_browser import ScriptedWorker, eval_payload, start_run_from_page
    from tests.dashboard.test_browser_pages import stop_run

    page = login("olga")
    run_id = start_run_from_page(page, "openai:live-evaluations")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        page.wait_for_selector("#live-state.live-on")
        assert page.locator("#run-evaluations tr[data-evaluation]").count() == 0
        worker.event(run_id, 0, "evaluation", eval_payload(1.25))
        page.wait_for_selector("#run-evaluations tr[data-evaluation]")
        worker.event(run_id, 1, "evaluation", eval_payload(None, correct=False))
        page.wait_for_function("document.querySelectorAll('#run-evaluations tr[data-evaluation]').length === 2")
        rows = page.locator("#run-evaluations tbody tr")  # newest first
        assert "Incorrect" in rows.nth(0).inner_text() and "#1" in rows.nth(0).inner_text()
        assert "1.250×" in rows.nth(1).inner_text() and "Correct" in rows.nth(1).inner_text()
        # The rows drawn live are the rows the page renders: reload and compare.
        live = rows.all_inner_texts()
        page.reload()
        page.wait_for_selector("#run-evaluations tr[data-evaluation]")
        assert page.locator("#run-evaluations tbody tr").all_inner_texts() == live
    finally:
        worker.close()
    stop_run(page, live_site["base"], run_id)
