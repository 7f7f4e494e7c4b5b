"""The compare page in a real browser: two runs picked on the runs list, Compare pressed, one line each on the
chart. Same live server as tests/dashboard/test_browser.py (its own instance for this module)."""

import pytest

from tests.dashboard import test_browser as browser
from tests.dashboard.test_browser import ScriptedWorker, eval_payload, start_run_from_page
from tests.dashboard.test_browser_pages import stop_run

# The live server, the browser and the signed-in pages of tests/dashboard/test_browser.py.
chromium, live_site, login = browser.chromium, browser.live_site, browser.login

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


def run_with_evaluations(page, live_site, model: str, speedups: list[float]) -> int:
    """A run started from the page, its evaluations sent by a worker, then stopped (freeing the worker's slot)."""
    run_id = start_run_from_page(page, model)
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        for seq, speedup in enumerate(speedups):
            worker.event(run_id, seq, "evaluation", eval_payload(speedup))
    finally:
        worker.close()
    stop_run(page, live_site["base"], run_id)
    return run_id


def test_two_runs_picked_on_the_runs_list_open_a_comparison_with_a_line_each(live_site, login):
    page = login("olga")
    first = run_with_evaluations(page, live_site, "openai:compare-a", [1.25, 1.5])
    page.goto(live_site["base"] + "/")
    second = run_with_evaluations(page, live_site, "openai:compare-b", [1.1, 1.05, 1.75])
    page.goto(live_site["base"] + "/")
    page.check(f"#runs-rows input[name=runs][value='{first}']")
    page.check(f"#runs-rows input[name=runs][value='{second}']")
    page.click("#compare-button")
    page.wait_for_selector("#compare-chart[data-runs='2']")
    assert f"runs={first}&runs={second}" in page.url or f"runs={second}&runs={first}" in page.url
    lines = page.evaluate("""() => document.getElementById('compare-chart').data
        .filter((t) => t.meta === 'run').map((t) => ({name: t.name, y: t.y}))""")
    by_name = {line["name"].split()[0]: line["y"] for line in lines}
    assert len(lines) == 2
    assert by_name == {f"#{first}": [1.25, 1.5], f"#{second}": [1.1, 1.1, 1.75]}
    assert page.locator("#compare-chart .scatterlayer .trace").count() >= 2
    assert page.locator(f"#compare-summary tr[data-run='{second}'] td.best").inner_text() == "1.750×"
