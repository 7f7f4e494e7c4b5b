"""The tasks page and a task's page: every registered task with its ABI, scenarios, baselines and tolerance as the
harness summarises it (Task.spec, stored by sync_tasks), who can run it now, and a Start that picks it."""

import io
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from gpu_harness import get_task
from runs.services import run_start, worker_connected
from tests.dashboard.helpers import make_user, make_worker
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def synced():
    call_command("sync_tasks", stdout=io.StringIO())


def signed_in(client, role=None):
    client.force_login(make_user(f"u-{role or 'viewer'}", role))
    return client


def row(html: str, marker: str) -> str:
    start = html.index(marker)
    return html[start : html.index("</tr>", start)]


def test_the_tasks_page_lists_every_task_with_its_target_scenarios_baselines_goal_and_serving_workers(client, synced):
    signed_in(client)
    html = client.get(reverse("tasks")).content.decode()
    attention, matmul = row(html, 'data-task="attention_fwd"'), row(html, 'data-task="matmul_cpu"')
    harness = get_task("matmul_cpu")
    assert "<code>cpu</code>" in matmul and harness.spec.description in matmul
    assert f"{len(harness.scenarios())} ({len(harness.quick_ids())} quick)" in matmul
    assert "numpy, naive" in matmul and "2.000× over naive" in matmul
    assert f"{len(get_task('attention_fwd').scenarios())} (" in attention and "cudnn, flash, fa3, fa4" in attention
    assert re.search(r'class="serving[^"]*"[^>]*>0<', attention) and re.search(r'class="serving[^"]*"[^>]*>0<', matmul)
    # Two connected hosts serve cpu, one of them cuda-sm90 too; a third serves cpu but is offline.
    for name, targets in (("cpu-box", ["cpu"]), ("h200", ["cpu", "cuda-sm90"]), ("away", ["cpu"])):
        host, _ = make_worker(name, targets=targets)
        if name != "away":
            worker_connected(worker=host, connection=f"chan-{name}")
    html = client.get(reverse("tasks")).content.decode()
    assert re.search(r'class="serving"[^>]*>2<', row(html, 'data-task="matmul_cpu"'))
    assert re.search(r'class="serving"[^>]*>1<', row(html, 'data-task="attention_fwd"'))


def test_only_an_operator_sees_start_and_it_opens_the_form_with_the_task_picked(client, synced):
    signed_in(client)
    assert "start-task" not in client.get(reverse("tasks")).content.decode()
    assert "start-task-run" not in client.get(reverse("task_detail", args=["matmul_cpu"])).content.decode()
    operator = signed_in(client.__class__(), "operator")
    html = operator.get(reverse("tasks")).content.decode()
    assert 'href="/runs/start/?task=attention_fwd"' in row(html, 'data-task="attention_fwd"')
    detail = operator.get(reverse("task_detail", args=["attention_fwd"])).content.decode()
    assert 'id="start-task-run" href="/runs/start/?task=attention_fwd"' in detail
    form = operator.get(reverse("run_start") + "?task=attention_fwd").content.decode()
    assert re.search(r'<option value="attention_fwd" selected>', form)
    assert not re.search(r'<option value="matmul_cpu" selected>', form)
    # An unknown name picks nothing (the form's own default), rather than failing.
    plain = operator.get(reverse("run_start") + "?task=nope").content.decode()
    picked = re.findall(r'<option value="([^"]*)" selected>', plain.split('name="task"', 1)[1].split("</select>")[0])
    assert picked == [""]


def test_a_tasks_page_shows_its_abi_scenarios_quick_subset_baselines_tolerance_source_and_runs(client, synced):
    signed_in(client)
    from runs.models import Task

    run = run_start(task=Task.objects.get(name="matmul_cpu"), model="replay:demo")
    html = client.get(reverse("task_detail", args=["matmul_cpu"])).content.decode()
    harness = get_task("matmul_cpu")
    abi = html[html.index('id="task-abi"') :]
    assert "extern &quot;C&quot; int kseek_matmul(const float* a" in abi[: abi.index("</pre>")]
    quick = set(harness.quick_ids())
    for scenario in harness.scenarios():
        line = row(html, f'data-scenario="{scenario.id}"')
        assert ('class="quick"' in line) == (scenario.id in quick)
        assert f"<td>{scenario.params['m']}</td><td>{scenario.params['n']}</td><td>{scenario.params['k']}</td>" in line
    assert "<th>m</th><th>n</th><th>k</th>" in html
    assert "<td>6.63e+04</td>" in row(html, 'data-scenario="m1_n257_k129"')  # 2*m*n*k FLOP of one call
    baselines = html[html.index('id="task-baselines"') :]
    assert "<strong>numpy</strong>" in baselines and "reference.py:numpy_matmul" in baselines
    assert harness.spec.tolerance.describe().replace("'", "&#x27;") in html
    assert "FLOP = <code>2*m*n*k</code>" in html
    # The starting kernel, highlighted as the kernel pages do (pygments, with line numbers).
    assert 'class="sourcetable"' in html and "kseek_matmul" in html and "pygments.css" in html
    assert f'data-run="{run.pk}"' in html and "1 of 1" in html


def test_the_cuda_tasks_page_names_its_target_baselines_and_cuda_source(client, synced):
    signed_in(client)
    html = client.get(reverse("task_detail", args=["attention_fwd"])).content.decode()
    assert "<code>cuda-sm90</code>" in html and "FlashAttention-2" in html
    assert "no runs of this task yet" in html.lower()
    assert html.count('class="quick"') == len(get_task("attention_fwd").quick_ids())
    assert "<th>head_dim</th>" in html and "<th>causal</th>" in html
    assert 'id="task-serving">0 (a run of it waits for a worker whose hello lists cuda-sm90)' in html


def test_a_task_synced_before_its_summary_shows_what_it_has_and_says_how_to_fill_the_rest(client):
    signed_in(client)
    make_task("old_task", description='extern "C" int f(void);', scenario_ids=["a", "b"])
    html = client.get(reverse("task_detail", args=["old_task"])).content.decode()
    assert 'id="task-not-summarised"' in html and "manage.py sync_tasks" in html
    assert 'data-scenario="a"' in html and 'data-scenario="b"' in html and "int f(void);" in html


def test_an_unknown_task_is_404_and_anonymous_visitors_sign_in_first(client):
    assert client.get(reverse("tasks")).status_code == 302
    signed_in(client)
    assert client.get(reverse("task_detail", args=["nope"])).status_code == 404


def test_the_navigation_and_the_start_page_link_to_the_tasks(client):
    signed_in(client, "operator")
    assert 'href="/tasks/">Tasks</a>' in client.get(reverse("home")).content.decode()
    assert 'id="browse-tasks"' in client.get(reverse("run_start")).content.decode()
