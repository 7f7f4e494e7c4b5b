"""What the pages look like in a real browser: buttons shown only when they do something, a header whose cells
do not run into each other, a page readable on a phone. Same live server as tests/dashboard/test_browser.py."""

import pytest

from tests.dashboard import test_browser as browser
from tests.dashboard.test_browser import ScriptedWorker, start_run_from_page

# The live server, the browser and the signed-in pages of tests/dashboard/test_browser.py.
chromium, live_site, login = browser.chromium, browser.live_site, browser.login

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

LONG_MODEL = "replay:agentloop/replays/" + "a_very_long_recorded_trace_name_" * 4 + ".jsonl"


def test_load_older_and_newer_show_only_when_there_are_such_steps(live_site, login):
    page = login("olga")
    run_id = start_run_from_page(page, "replay:few-steps")
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
    start_run_from_page(page, LONG_MODEL)
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
