"""The compare page: two runs made through the real event store (the worker's batch path), their summary
figures, the chart's lines and question markers, the CSV and JSON exports, and the clear refusals."""

import csv
import html
import io
import re
from pathlib import Path

import pytest
from django.urls import reverse

from runs.models import Question, Run
from runs.selectors_bank import gain_text
from runs.services import question_ask_human, question_review, run_claim, worker_events_record
from tests.dashboard.helpers import evaluation_payload, event, make_user, make_worker, question_payload, usage_event
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


def record(run, seq, kind, payload):
    """Store an event as the server stores its worker's: through the one store, with what it implies."""
    [outcome] = worker_events_record(items=[(run.worker, event(run.pk, seq, kind, payload))])
    assert outcome.stored, outcome.error


def spend(run, seq, **counts):
    """A model call's usage event: the only kind whose counts and cost a run's totals take (docs/protocol.md 1.1)."""
    [outcome] = worker_events_record(items=[(run.worker, usage_event(run.pk, seq, **counts))])
    assert outcome.stored, outcome.error


@pytest.fixture
def two_runs():
    """Run A reaches its 2x goal at its third evaluation after an approved and a vetoed question, and has a
    reviewer's own question; run B never reaches it (one of its evaluations is wrong)."""
    rita = make_user("rita", "reviewer")
    host, _ = make_worker()
    task = make_task()
    make_run(task=task, model="model-a")
    a = run_claim(worker=host)
    make_run(task=task, model="model-b")
    b = run_claim(worker=host)
    record(a, 0, "evaluation", evaluation_payload(1.2))
    record(a, 1, "question_proposed", question_payload("q-1", "Is the loop tiled?"))
    # rita approves it here (a worker's word credits no account: docs/protocol.md 1.2), and the agent reports it
    question_review(question=Question.objects.get(run=a), reviewer=rita, decision="approve")
    record(a, 2, "question_decided", {"question_ref": "q-1", "action": "approve", "by": "reviewer", "reviewer": "rita"})
    record(a, 3, "evaluation", evaluation_payload(1.8))
    record(a, 4, "question_proposed", question_payload("q-2", "Try SIMD?"))
    record(a, 5, "question_decided", {"question_ref": "q-2", "action": "veto", "by": "reviewer"})  # credited to no one
    record(a, 6, "evaluation", evaluation_payload(2.4))
    record(a, 7, "note", {"text": "after the goal", "level": "info"})
    spend(a, 8, tokens_in=100, tokens_out=10, cost_usd=0.5)
    spend(a, 9, tokens_in=50, tokens_out=5, cost_usd=0.25)
    question_ask_human(run=a, author=rita, text="Have you profiled it?")
    # B's kernels are sources of its own: two runs' best kernels of one source compare as "same source".
    record(b, 0, "evaluation", evaluation_payload(1.1, source="// b\n"))
    record(b, 1, "evaluation", evaluation_payload(None, correct=False, source="// b wrong\n"))
    record(b, 2, "evaluation", evaluation_payload(1.5, source="// b best\n"))
    spend(b, 3, tokens_in=7, cost_usd=0.125)
    return Run.objects.get(pk=a.pk), Run.objects.get(pk=b.pk)


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def compare_url(*ids, export=None) -> str:
    url = reverse("run_compare") + "?runs=" + ",".join(str(i) for i in ids)
    return url + (f"&format={export}" if export else "")


def test_the_summary_gives_each_runs_figures_from_its_evaluations_and_questions(viewer, two_runs):
    a, b = two_runs
    data = viewer.get(compare_url(a.pk, b.pk, export="json")).json()
    row_a, row_b = data["summary"]
    assert row_a["run_id"] == a.pk and row_b["run_id"] == b.pk
    assert (row_a["goal_baseline"], row_a["goal_speedup"], row_a["goal_met"]) == ("naive", 2.0, True)
    assert (row_a["best_speedup"], row_a["evaluations"], row_a["evaluations_to_goal"]) == (2.4, 3, 3)
    assert (row_a["steps"], row_a["steps_to_goal"]) == (10, 7)  # its two usage events after the goal count as steps
    assert (row_a["tokens_in"], row_a["tokens_out"], row_a["cost_usd"]) == (150, 15, 0.75)
    assert (row_a["questions_asked"], row_a["questions_vetoed"], row_a["questions_by_reviewers"]) == (2, 1, 1)
    # The bank's attribution: 1.2 before the tiling question, 2.4 by the next asked one (the reviewer's own).
    assert row_a["largest_gain"] == pytest.approx(2.0) and row_a["largest_gain_question"] == "Is the loop tiled?"
    assert (row_b["goal_met"], row_b["best_speedup"], row_b["evaluations"], row_b["evaluations_to_goal"]) == (
        False,
        1.5,
        3,
        None,
    )
    assert (row_b["steps_to_goal"], row_b["questions_asked"], row_b["largest_gain"]) == (None, 0, None)
    assert (row_b["tokens_in"], row_b["cost_usd"]) == (7, 0.125)


def test_the_chart_data_has_one_best_so_far_line_per_run_with_its_decided_questions(viewer, two_runs):
    a, b = two_runs
    line_a, line_b = viewer.get(compare_url(a.pk, b.pk, export="json")).json()["series"]
    assert line_a["evaluations"] == [1, 2, 3] and line_a["best"] == [1.2, 1.8, 2.4]
    assert line_b["best"] == [1.1, 1.1, 1.5]
    marks = [(q["text"], q["evaluation"], q["best"], q["decided_by"], q["decision"]) for q in line_a["questions"]]
    assert marks == [
        ("Is the loop tiled?", 1, 1.2, "rita", "approved"),
        ("Try SIMD?", 2, 1.8, "no reviewer here, as the agent reports", "vetoed"),
        ("Have you profiled it?", 3, 2.4, "rita", "approved"),
    ]
    assert line_b["questions"] == []


def test_the_page_shows_the_table_and_the_chart_data_and_links_its_exports(viewer, two_runs):
    a, b = two_runs
    page = viewer.get(compare_url(a.pk, b.pk)).content.decode()
    row_a = page.split(f'<tr data-run="{a.pk}">')[1].split("</tr>")[0]
    assert 'class="best">2.400×' in row_a and 'class="goal-met">yes' in row_a
    assert 'class="evaluations">3 / 3' in row_a and 'class="questions">2 / 1 / 1' in row_a
    assert "Is the loop tiled?" in row_a.split('class="largest-gain"')[1]
    # the largest gain is written as the bank writes a gain: with its interval, or saying its noise is unknown
    summary_a = viewer.get(compare_url(a.pk, b.pk, export="json")).json()["summary"][0]
    written = gain_text(summary_a["largest_gain"], summary_a["largest_gain_low"], summary_a["largest_gain_high"])
    assert "×" in written and html.escape(written) in row_a.split('class="largest-gain"')[1]
    assert 'id="compare-data"' in page and 'id="compare-chart"' in page and "/assets/plotly.min.js" in page
    assert "format=csv" in page and f"runs={a.pk},{b.pk}&amp;format=json" in page


def test_the_csv_has_a_row_per_run_with_the_summary_columns(viewer, two_runs):
    a, b = two_runs
    response = viewer.get(compare_url(b.pk, a.pk, export="csv"))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["run_id"] for r in rows] == [str(b.pk), str(a.pk)]
    assert rows[1]["goal_met"] == "True" and rows[1]["best_speedup"] == "2.4" and rows[1]["evaluations_to_goal"] == "3"
    assert rows[0]["evaluations_to_goal"] == "" and rows[0]["largest_gain_question"] == ""
    assert {"largest_gain_low", "largest_gain_high"} <= set(rows[1])


def test_the_runs_lists_boxes_send_repeated_ids_which_compare_like_a_shared_link(viewer, two_runs):
    a, b = two_runs
    page = viewer.get(reverse("home")).content.decode()
    assert 'id="compare-form"' in page and f'name="runs" value="{a.pk}" form="compare-form"' in page
    response = viewer.get(reverse("run_compare"), {"runs": [a.pk, b.pk], "format": "json"})
    assert [r["run_id"] for r in response.json()["summary"]] == [a.pk, b.pk]


@pytest.mark.parametrize(
    ("runs", "says"),
    [
        ("", "pick 2 to 8 runs to compare (0 given)"),
        ("{a}", "pick 2 to 8 runs to compare (1 given)"),
        ("{a},{a}", "pick 2 to 8 runs to compare (1 given)"),
        ("1,2,3,4,5,6,7,8,9", "pick 2 to 8 runs to compare (9 given)"),
        ("{a},abc", "run ids are numbers: abc is not"),
    ],
)
def test_a_bad_pick_gets_a_400_page_saying_why(viewer, two_runs, runs, says):
    a, _ = two_runs
    response = viewer.get(reverse("run_compare") + "?runs=" + runs.format(a=a.pk))
    assert response.status_code == 400
    assert says in response.content.decode()


def test_unknown_runs_get_a_404_naming_them(viewer, two_runs):
    a, _ = two_runs
    response = viewer.get(compare_url(a.pk, 99998, 99999))
    assert response.status_code == 404
    assert "no such run: #99998, #99999" in response.content.decode()


@pytest.mark.parametrize("runs", ["99999", "99999,99999", "99999999999999999999"])
def test_one_unknown_run_alone_gets_a_404_naming_it_not_a_request_for_more_runs(viewer, two_runs, runs):
    """It was a 400 "pick 2 to 8 runs (1 given)", as though the run existed and merely stood alone."""
    response = viewer.get(reverse("run_compare") + "?runs=" + runs)
    assert response.status_code == 404
    assert f"no such run: #{runs.split(',')[0]}" in response.content.decode()


def test_the_compare_page_needs_a_sign_in(client, two_runs):
    a, b = two_runs
    response = client.get(compare_url(a.pk, b.pk))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_an_id_of_thousands_of_digits_gets_a_404_naming_it_not_a_server_error(viewer, two_runs):
    """Python's int() refuses a string of more than 4300 digits: a shared link holding such an id was a 500."""
    a, _ = two_runs
    response = viewer.get(compare_url(a.pk, "9" * 5000))
    assert response.status_code == 404
    assert "no such run: #99999999999999999999… (5000 digits)" in response.content.decode()


def test_docs_compare_md_lists_every_column_of_the_summary_and_no_other():
    """The summary's table in docs/compare.md is what a CSV or JSON reader goes by: it lacked `imported`."""
    from runs.run_pages.selectors_compare import SUMMARY_FIELDS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "compare.md").read_text()
    table = doc.split("## The summary table", 1)[1].split("\n## ", 1)[0]
    documented = {
        name
        for line in table.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`(\w+)`", line.split("|")[1])
    }
    assert documented == set(SUMMARY_FIELDS)


@pytest.mark.django_db
def test_a_run_judged_against_a_goal_of_its_own_says_so_in_the_summary(viewer):
    # The demo replay meets its recording's 0.5x, not the task's 2x: its "goal met: yes" is not the task's.
    from runs.demo import DEMO_MODEL

    task = make_task()
    demo = make_run(task=task, model=DEMO_MODEL, goal_speedup=0.5)
    own = make_run(task=task, model="model-a")
    page = viewer.get(compare_url(demo.pk, own.pk)).content.decode()
    note = "demo goal 0.500× over naive (the task's is 2.000×)"
    assert html.unescape(page).count(note) == 1
    rows = {
        int(r["run_id"]): r
        for r in csv.DictReader(io.StringIO(viewer.get(compare_url(demo.pk, own.pk, export="csv")).content.decode()))
    }
    assert (rows[demo.pk]["goal_note"], rows[own.pk]["goal_note"]) == (note, "")
