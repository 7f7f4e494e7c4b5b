"""Verify here, end to end (issue 34, item 1): real daphne, the real worker (`python -m agentloop worker`), the
real harness, a real browser. A forged trace (the demo, every speed-up set to 99x) is imported: its kernel is
marked imported and no figure of it is verified. An operator presses "Verify here" on its kernel's page; a worker
that serves the CPU target evaluates that exact source once on the full set; that result, and only it, becomes
the task's verified best, shown with the host and the library versions it was measured with."""

import hashlib
import json
import re

import pytest

from tests.dashboard import test_browser as browser
from tests.reliability.live import DEMO_TRACE, ROOT, LiveSite, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]
chromium = browser.chromium  # the browser tests' chromium fixture, used by name

NAIVE = (ROOT / "tasks" / "matmul_cpu" / "naive.cpp").read_text()
PASSWORD = "pw-123456789"


def forged_demo(path):
    """The demo trace with the naive kernel as every evaluation's source and 99 as every speed-up it claims."""
    lines = []
    for line in DEMO_TRACE.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "evaluation":
            payload, result = record["payload"], record["payload"]["result"]
            payload["kernel_source"] = result["kernel_source"] = NAIVE
            # (its hash with it, as a harness writes them: an import refuses a verdict naming another source)
            payload["kernel_sha256"] = result["kernel_sha256"] = hashlib.sha256(NAIVE.encode()).hexdigest()
            payload["speedup"] = 99.0
            for figure in result["geomean"].values():
                figure["speedup"] = 99.0
            for scenario in result["scenarios"]:
                scenario["speedup"] = {name: 99.0 for name in scenario["speedup"]}
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def site(tmp_path):
    live = LiveSite(tmp_path / "site").setup()
    try:
        yield live
    finally:
        live.close()


def best_per_task(page) -> str:
    return page.inner_text("#best-per-task")


def test_verify_here_measures_an_imported_claim_on_a_real_worker_and_only_that_is_verified(site, chromium, tmp_path):
    port = site.start_server()
    base = f"http://127.0.0.1:{port}"
    token = site.worker_token("cpu-host")
    imported_run, kernel_id = site.django(
        "from django.contrib.auth import get_user_model\nfrom django.contrib.auth.models import Group\n"
        "from runs.services import trace_import\n"
        "olga = get_user_model().objects.create_user('olga', password=password)\n"
        "olga.groups.add(Group.objects.get_or_create(name='operator')[0])\n"
        "run = trace_import(lines=open(trace, 'rb'), name='forged.jsonl', user=olga)\n"
        "result = [run.pk, run.kernels.get().pk]",  # one source: one kernel
        trace=str(forged_demo(tmp_path / "forged.jsonl")),
        password=PASSWORD,
    )

    context = chromium.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(base + "/accounts/login/")
        page.fill("input[name=username]", "olga")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("h1:has-text('Runs')")

        page.goto(base + "/kernels/")
        assert "99.000" not in best_per_task(page) and "No kernel is verified correct yet." in best_per_task(page)
        assert "imported" in page.inner_text("#kernel-groups")
        page.goto(f"{base}/kernels/{kernel_id}/")
        assert "imported: a trace's claim, not measured here" in page.inner_text("#lead-evaluation")
        page.click("#verify-here")
        page.wait_for_selector("#run-page")
        verify_run = int(re.search(r"/runs/(\d+)/", page.url).group(1))
        assert verify_run != imported_run and "verify" in page.inner_text(".run-header")

        state_dir = tmp_path / "worker"
        site.start_worker(port, token, state_dir)
        finished = wait_until(
            lambda: (
                site.query("select status from runs_run where id = ?", (verify_run,))[0][0]
                in ("succeeded", "failed", "stopped")
            ),
            300,
        )
        assert finished, site.worker_log(state_dir)
        status, reason = site.query("select status, status_reason from runs_run where id = ?", (verify_run,))[0]
        assert (status, reason.split(":")[0]) == ("stopped", "verified"), (reason, site.worker_log(state_dir))
        full = sum(
            len((json.loads(verdict) if isinstance(verdict, str) else verdict).get("scenarios") or [])
            for (verdict,) in site.query("select verdict from runs_evaluation where run_id = ?", (verify_run,))
        )
        assert full == len(
            site.django("from runs.models import Task\nresult = Task.objects.get(name='matmul_cpu').scenario_ids")
        )

        page.goto(base + "/kernels/")
        best = best_per_task(page)
        assert "matmul_cpu" in best and "over naive" in best and "99.000" not in best  # the measured figure
        assert f"/runs/{verify_run}/" in page.inner_html("#best-per-task")
        page.goto(f"{base}/kernels/{kernel_id}/")
        verified = page.inner_text("#verification")
        assert "verified: full set, measured here" in verified and "libraries: numpy " in verified
        assert "host " in verified and "Python " in verified and page.query_selector("#verify-here") is None
        page.goto(f"{base}/runs/{imported_run}/")
        assert page.inner_text("#run-best") == "—"  # the import itself stays a claim
    finally:
        context.close()
