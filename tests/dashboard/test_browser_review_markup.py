"""A question's text, its agent's reason and a reviewer's edit are shown as typed, never run as markup, on every
page that shows them: the review queue, the run page and its live feed (a step arrives over the websocket and
its line is fetched), the kernel page's "question before it", the bank page (a reviewer's own bank question).
Same live server as tests/dashboard/test_browser.py (its own instance for this module)."""

import pytest

from tests.dashboard import test_browser as browser
from tests.dashboard.test_browser import ScriptedWorker, eval_payload, start_run_from_page
from tests.dashboard.test_browser_pages import stop_run

chromium, live_site, login = browser.chromium, browser.live_site, browser.login

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

# Each tries to set window.__xss when read as markup, in a text node or an attribute.
PROPOSAL = "Is it <img src=x onerror=\"window.__xss='proposal'\"> bound? <script>window.__xss='script'</script>"
REASON = "<svg onload=\"window.__xss='reason'\"></svg> plateau"
EDIT = '"><img src=x onerror="window.__xss=\'edit\'"> & what now?'
BANK = "Which <b onmouseover=\"window.__xss='bank'\">load</b> <img src=x onerror=\"window.__xss='bank'\"> repeats?"


def no_markup_ran(page) -> None:
    # An <img onerror> fires once its (bad) image has failed to load, which under load may take longer than the
    # 300 ms pause this once was alone: wait until every image of the page has loaded or failed (a failed one's
    # error event is fired in the task that marks it complete), then keep the pause for markup inserted late.
    page.wait_for_function("() => [...document.images].every((image) => image.complete)")
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.__xss === undefined"), page.evaluate("() => window.__xss")


def test_a_questions_text_reason_and_edit_are_shown_as_typed_on_every_page(live_site, login):
    operator = login("olga")
    run_id = start_run_from_page(operator, "openai:markup-review")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        reviewer = login("rita")
        reviewer.goto(live_site["base"] + f"/runs/{run_id}/")
        reviewer.wait_for_selector("#live-state.live-on")
        proposal = {"question_ref": "q-x", "text": PROPOSAL, "reason": REASON, "category": "hypothesis"}
        worker.event(run_id, 0, "question_proposed", {**proposal, "decision_point": "plateau", "by": "model"})
        reviewer.wait_for_selector("#step-0")  # streamed into the open page
        assert "<img src=x" in reviewer.inner_text("#step-0")
        no_markup_ran(reviewer)

        reviewer.goto(live_site["base"] + "/review/")
        item = f".review-item[data-question]:has(blockquote:has-text('{PROPOSAL[:10]}'))"
        reviewer.wait_for_selector(item)
        assert reviewer.inner_text(item + " blockquote") == PROPOSAL
        assert REASON in reviewer.inner_text(item + " .reason")
        no_markup_ran(reviewer)
        reviewer.keyboard.press("e")
        reviewer.fill(item + " textarea", EDIT)
        reviewer.keyboard.press("Control+Enter")
        decision = worker.directive("question_decision")
        assert (decision["decision"], decision["text"]) == ("edit", EDIT)
        worker.event(
            run_id,
            1,
            "question_decided",
            {
                "question_ref": "q-x",
                "action": "edit",
                "text": EDIT,
                "original_text": PROPOSAL,
                "by": "reviewer",
                "reviewer": "rita",
            },
        )
        worker.event(run_id, 2, "evaluation", eval_payload(1.5))

        reviewer.goto(live_site["base"] + f"/runs/{run_id}/")
        reviewer.wait_for_selector("#step-2")
        assert EDIT in reviewer.inner_text("#feed-list")
        no_markup_ran(reviewer)
        kernel = reviewer.evaluate(
            "() => [...document.querySelectorAll('a')].map((a) => a.getAttribute('href'))"
            ".find((h) => /^\\/kernels\\/\\d+\\/$/.test(h))"
        )
        reviewer.goto(live_site["base"] + kernel)
        reviewer.wait_for_selector("#question-before")
        assert EDIT in reviewer.inner_text("#question-before")
        no_markup_ran(reviewer)
    finally:
        worker.close()
    stop_run(operator, live_site["base"], run_id)

    reviewer.goto(live_site["base"] + "/bank/")
    reviewer.fill("form textarea[name=text]", BANK)
    reviewer.check("input[name=triggers][value=plateau]")
    reviewer.click("form[action$='/bank/add/'] button")
    reviewer.wait_for_selector(f"text={BANK[:20]}")
    assert BANK in reviewer.inner_text("main")
    reviewer.hover(f"text={BANK[:20]}")
    no_markup_ran(reviewer)
