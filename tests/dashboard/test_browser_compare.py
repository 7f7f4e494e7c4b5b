"""The compare page in a real browser: two runs picked on the runs list, Compare pressed, one line each on the
chart. Same live server as tests/dashboard/test_browser.py (its own instance for this module)."""

import html

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


# A question's text as a trace or a model may write it: Plotly renders a subset of HTML (a live link, bold, a
# styled span) and entities in hover boxes, so each must reach it escaped and be shown as typed.
MARKUP = (
    'Tiled? <a href="https://example.com/x" target="_blank">click</a> <b>bold</b> '
    '<span style="font-size:80px">big</span> &lt;i&gt; & done'
)


def shown_as_typed(page, chart: str, curve: int, point: int = 0) -> str:
    """The text of `chart`'s hover box over point `point` of trace `curve`, after checking no markup rendered."""
    page.evaluate("(chart) => Plotly.Fx.unhover(chart)", chart)  # an earlier hover's box goes first
    page.wait_for_selector(f"#{chart} .hoverlayer .hovertext", state="detached")
    page.evaluate(
        "([chart, curve, point]) => Plotly.Fx.hover(chart, [{curveNumber: curve, pointNumber: point}])",
        [chart, curve, point],
    )
    box = page.wait_for_selector(f"#{chart} .hoverlayer .hovertext")
    assert page.locator(f"#{chart} a").count() == 0  # no link drawn anywhere in the chart
    assert (
        page.locator(f"#{chart} .hoverlayer tspan[style*='bold'], #{chart} .hoverlayer tspan[style*='80px']").count()
        == 0
    )
    return box.text_content()


def test_a_questions_markup_is_handed_to_plotly_escaped_and_its_hover_shows_it_as_typed(live_site, login):
    page = login("olga")
    run_id = start_run_from_page(page, "openai:markup-a")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        early = {
            "question_ref": "q-0",
            "text": "Where is the time?",
            "category": "hypothesis",
            "decision_point": "stopped_short",
        }
        worker.event(run_id, 0, "question_proposed", {**early, "by": "model"})  # before any verified best
        worker.event(run_id, 1, "evaluation", eval_payload(1.25))
        question = {"question_ref": "q-m", "text": MARKUP, "category": "hypothesis", "decision_point": "plateau"}
        worker.event(run_id, 2, "question_proposed", {**question, "by": "model"})
        worker.event(run_id, 3, "evaluation", eval_payload(1.5))
    finally:
        worker.close()
    stop_run(page, live_site["base"], run_id)
    page.goto(live_site["base"] + "/")
    other = run_with_evaluations(page, live_site, "openai:markup-b", [1.1])

    page.goto(live_site["base"] + f"/runs/compare/?runs={run_id},{other}")
    page.wait_for_selector("#compare-chart[data-runs='2']")
    questions = page.evaluate("""() => document.getElementById('compare-chart').data
        .filter((t) => t.meta === 'questions')[0]""")
    handed = questions["customdata"][1]
    assert handed[0] == html.escape(MARKUP, quote=False)  # &, < and > escaped: '&lt;i&gt;' became '&amp;lt;i&amp;gt;'
    hover = shown_as_typed(page, "compare-chart", 1, point=1)
    assert MARKUP in hover and "closed undecided: the run stopped while it waited for a reviewer" in hover
    assert "best verified then: 1.250×" in hover
    # the question asked before any verified best is drawn open on the axis and says so, not read as 0x
    assert questions["marker"]["symbol"] == ["diamond-open", "diamond"] and questions["y"] == [0, 1.25]
    assert "asked before any verified best" in shown_as_typed(page, "compare-chart", 1, point=0)

    page.goto(live_site["base"] + f"/runs/{run_id}/")
    page.wait_for_selector("#speedup-chart[data-questions='2']")
    index = page.evaluate("() => document.getElementById('speedup-chart').data.findIndex((t) => t.meta === 'question')")
    handed = page.evaluate(f"() => document.getElementById('speedup-chart').data[{index}].text.filter((t) => t)")
    assert handed == [early["text"]] * 2 + [html.escape(MARKUP, quote=False)] * 2  # each question a line of 2 points
    assert MARKUP in shown_as_typed(page, "speedup-chart", index, point=3)


def within_noise(payload: dict, low: float, high: float) -> dict:
    """`payload` (eval_payload's) with every scenario's timings and their intervals, such that its speed-up over
    naive lies within [low, high] (the candidate's median pinned at 1.0)."""
    speedup = payload["result"]["geomean"]["naive"]["speedup"]
    for s in payload["result"]["scenarios"]:
        s.update(time_ms=1.0, time_ci_ms=[1.0, 1.0], baseline_ms={"naive": speedup})
        s["baseline_ci_ms"] = {"naive": [low, high]}
    return payload


def test_the_compare_charts_hover_writes_a_best_inside_the_noise_as_no_difference(live_site, login):
    # The figure-labels audit, finding 2: the hover wrote the bare point (1.060×) where the summary says "no
    # difference"; it writes each best as the summary does, and so does a question's "best verified then".
    page = login("olga")
    run_id = start_run_from_page(page, "openai:noise-a")
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        worker.event(run_id, 0, "evaluation", within_noise(eval_payload(1.06), 0.82, 1.31))
        question = {"question_ref": "q-n", "text": "Tile it?", "category": "hypothesis", "decision_point": "plateau"}
        worker.event(run_id, 1, "question_proposed", {**question, "by": "model"})
    finally:
        worker.close()
    stop_run(page, live_site["base"], run_id)
    page.goto(live_site["base"] + "/")
    other = run_with_evaluations(page, live_site, "openai:noise-b", [1.5])

    page.goto(live_site["base"] + f"/runs/compare/?runs={run_id},{other}")
    page.wait_for_selector("#compare-chart[data-runs='2']")
    best = shown_as_typed(page, "compare-chart", 0, point=0)
    assert "evaluation 1: no difference (0.820–1.31×) over naive" in best and "1.060" not in best
    marker = shown_as_typed(page, "compare-chart", 1, point=0)
    assert "best verified then: no difference (0.820–1.31×)" in marker

    # Finding 3: the run page's best-so-far line says the same in its own hover, not the bare point.
    page.goto(live_site["base"] + f"/runs/{run_id}/")
    page.wait_for_selector("#speedup-chart[data-points='1']")
    line = page.evaluate("() => document.getElementById('speedup-chart').data.findIndex((t) => t.meta === 'best')")
    best = shown_as_typed(page, "speedup-chart", line, point=0)
    assert "best so far no difference (0.820–1.31×)" in best and "1.06" not in best
