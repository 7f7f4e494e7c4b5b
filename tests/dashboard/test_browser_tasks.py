"""The task pages in a real browser: the tasks list, a task's page, and a run started from it (the start form
opens with that task picked). Same live server as tests/dashboard/test_browser.py."""

import pytest

from tests.dashboard import test_browser as browser
from tests.dashboard.test_browser_pages import stop_run

chromium, live_site, login = browser.chromium, browser.live_site, browser.login

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


def test_an_operator_opens_the_tasks_opens_one_and_starts_a_run_of_it(live_site, login):
    page = login("olga")
    page.click("nav >> text=Tasks")
    page.wait_for_selector("h1:has-text('Tasks')")
    row = page.locator("tr[data-task=matmul_cpu]")
    assert "15 (6 quick)" in row.inner_text() and "numpy, naive" in row.inner_text()
    row.locator("a", has_text="matmul_cpu").click()
    page.wait_for_selector("h1:has-text('matmul_cpu')")
    assert "kseek_matmul" in page.inner_text("#task-abi")
    assert page.locator("#task-scenarios tr.quick").count() == 6
    assert page.locator(".source").count() >= 1  # the starting kernel, highlighted
    page.click("#start-task-run")
    page.wait_for_selector("#start-run")
    assert page.eval_on_selector("#start-run select[name=task]", "s => s.value") == "matmul_cpu"
    page.fill("#start-run input[name=model]", "openai:from-the-task-page")
    page.fill("#start-run input[name=budget_steps]", "10")
    page.click("#start-run-button")
    page.wait_for_selector("#run-page")
    run_id = int(page.get_attribute("#run-page", "data-run"))
    # The task's page lists the run it started.
    page.goto(f"{live_site['base']}/tasks/matmul_cpu/")
    assert page.locator(f"#task-runs tr[data-run='{run_id}']").count() == 1
    stop_run(page, live_site["base"], run_id)
