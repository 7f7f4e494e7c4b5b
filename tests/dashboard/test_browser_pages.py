"""What the pages look like in a real browser: buttons shown only when they do something, a header whose cells
do not run into each other, a page readable on a phone. Same live server as tests/dashboard/test_browser.py."""

import pytest

from tests.dashboard import test_browser as browser
from tests.dashboard.test_browser import ScriptedWorker, start_run_from_page

# The live server, the browser and the signed-in pages of tests/dashboard/test_browser.py.
chromium, live_site, login = browser.chromium, browser.live_site, browser.login

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

LONG_MODEL = "openai:" + "a_very_long_model_name_served_by_vllm_" * 3


def stop_run(page, base: str, run_id: int) -> None:
    """Stop a run a test left queued, so that the next test's worker claims that test's own run."""
    page.goto(f"{base}/runs/{run_id}/")
    page.click("#btn-stop")
    page.wait_for_selector("#run-status:has-text('Stopped')")


def test_load_older_and_newer_show_only_when_there_are_such_steps(live_site, login):
    page = login("olga")
    run_id = start_run_from_page(page, "openai:few-steps")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        for seq in range(3):
            worker.event(run_id, seq, "note", {"text": f"short-run note {seq}"})
        page.reload()
        page.wait_for_selector("#step-2")
        assert page.locator("#feed-older").is_hidden() and page.locator("#feed-newer").is_hidden()
    finally:
        worker.close()
    # A long run has older steps: the button shows.
    page.goto(f"{live_site['base']}/runs/{live_site['big_run']}/")
    page.wait_for_selector("#step-11999")
    assert page.locator("#feed-older").is_visible() and page.locator("#feed-newer").is_hidden()


def test_the_run_header_cells_do_not_overlap_with_a_long_model_name(live_site, login):
    page = login("olga")
    page.set_viewport_size({"width": 1280, "height": 900})
    run_id = start_run_from_page(page, LONG_MODEL)
    boxes = page.evaluate("""() => {
        const cells = [...document.querySelectorAll('.run-header dl > div')];
        const model = cells.find((c) => c.querySelector('dt').textContent.startsWith('Model'));
        const review = cells.find((c) => c.querySelector('dt').textContent === 'Review');
        const range = document.createRange();
        range.selectNodeContents(model.querySelector('dd'));
        const text = range.getBoundingClientRect();
        const other = review.getBoundingClientRect();
        return {text: [text.left, text.top, text.right, text.bottom], review: [other.left, other.top, other.right, other.bottom]};
    }""")
    (left, top, right, bottom), (r_left, r_top, r_right, r_bottom) = boxes["text"], boxes["review"]
    overlaps = left < r_right and r_left < right and top < r_bottom and r_top < bottom
    assert not overlaps, boxes
    stop_run(page, live_site["base"], run_id)


def page_scrolls_sideways(page) -> dict | None:
    """The page's width beyond the viewport, with the widest element's tag, or None when it fits."""
    return page.evaluate("""() => {
        const width = document.documentElement.clientWidth;
        if (document.documentElement.scrollWidth <= width) return null;
        const wide = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > width + 1);
        return {scrollWidth: document.documentElement.scrollWidth, width,
                widest: wide.slice(0, 5).map((el) => el.tagName + '#' + el.id + '.' + el.className)};
    }""")


def test_the_pages_are_readable_at_390_px_wide_with_the_runs_table_scrolling_in_its_own_box(live_site, login):
    page = login("olga")
    run_id = start_run_from_page(page, LONG_MODEL)
    page.set_viewport_size({"width": 390, "height": 844})
    base = live_site["base"]
    for path in (
        "/",
        "/runs/start/",
        f"/runs/{live_site['big_run']}/",
        "/review/",
        "/kernels/",
        "/workers/",
        "/bank/",
        "/tasks/",
        "/tasks/matmul_cpu/",
    ):
        page.goto(base + path)
        page.wait_for_load_state("load")
        assert page_scrolls_sideways(page) is None, (path, page_scrolls_sideways(page))
    # Whatever the runs table needs beyond the screen, its own box scrolls, not the page.
    page.goto(base + "/")
    assert page.evaluate("getComputedStyle(document.querySelector('table.runs').parentElement).overflowX") == "auto"
    stop_run(page, base, run_id)


def right_edge_on_screen(page, selector: str) -> bool:
    """Whether the element ends within the viewport's width, nothing of it scrolled out of sight sideways."""
    return page.evaluate(
        "(s) => document.querySelector(s).getBoundingClientRect().right <= document.documentElement.clientWidth",
        selector,
    )


def test_at_390_px_the_headline_figures_are_on_screen_without_scrolling_sideways(live_site, login):
    """Audit finding 13: the runs list's Best speedup and the kernel page's figure were off-screen on a phone."""
    page = login("olga")
    page.set_viewport_size({"width": 390, "height": 844})
    base = live_site["base"]
    page.goto(base + "/")
    assert page.locator("table.runs th.best").is_visible() and right_edge_on_screen(page, "table.runs th.best")
    assert page.locator("table.runs th:has-text('Model')").is_hidden()  # the run's page has the rest
    page.goto(f"{base}/tasks/matmul_cpu/")
    assert right_edge_on_screen(page, "#task-runs th.best")
    page.goto(f"{base}/evaluations/{live_site['evidence_evaluation']}/")
    page.locator("main a[href^='/kernels/']").first.click()  # "Kernel <its name>", the evaluation's kernel
    page.wait_for_selector("#lead-evaluation")
    figure = page.locator("#evidence-headline")
    assert figure.is_visible() and figure.inner_text().startswith("speed-up over cudnn: ")
    assert right_edge_on_screen(page, "#evidence-headline")


def test_the_pages_carry_a_favicon(live_site, login):
    page = login("olga")
    href = page.get_attribute("link[rel=icon]", "href")
    response = page.request.get(live_site["base"] + href)
    assert response.ok and response.headers["content-type"].startswith("image/svg+xml")
    assert page.request.get(live_site["base"] + "/favicon.ico").ok  # the browsers' own guess leads to it


def test_the_demo_starts_from_the_runs_list_says_what_it_waits_for_and_streams_live(live_site, login):
    page = login("olga")
    page.click("#start-demo-button")
    page.wait_for_selector("#run-page")
    run_id = int(page.get_attribute("#run-page", "data-run"))
    assert "Queued" in page.inner_text("#run-status")
    assert "no worker is online" in page.inner_text("#run-queue-reason")
    assert page.locator("#btn-pause").is_hidden() and page.locator("#btn-stop").is_visible()
    page.wait_for_selector("#live-state.live-on")
    worker = ScriptedWorker(live_site)
    try:
        claimed = worker.claim()
        assert claimed["id"] == run_id and claimed["model"] == "replay:agentloop/replays/matmul_cpu_demo.jsonl"
        worker.event(run_id, 0, "status", {"status": "running", "reason": "started"})
        worker.event(run_id, 1, "note", {"text": "the demo streams"})
        page.wait_for_selector("#step-1:has-text('the demo streams')")
        page.wait_for_selector("#run-status:has-text('Running')")
        assert page.locator("#run-queue-reason").is_hidden()
        page.wait_for_selector("#btn-pause:visible")
        assert page.locator("#btn-resume").is_hidden()
        page.click("#btn-stop")
        assert worker.directive("stop")["run_id"] == run_id
        page.wait_for_selector("#run-status:has-text('Stopped')")
        page.wait_for_selector("#run-controls", state="hidden")
    finally:
        worker.close()


def test_the_bank_chart_draws_its_bars_with_error_bars_and_no_script_error(live_site, login):
    page = login("olga")
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(live_site["base"] + "/bank/")
    page.wait_for_function("document.getElementById('bank-chart').data !== undefined")
    kinds = page.evaluate("document.getElementById('bank-chart').data.map((t) => t.error_y && t.error_y.type)")
    assert kinds == ["data", "data"] and errors == []
