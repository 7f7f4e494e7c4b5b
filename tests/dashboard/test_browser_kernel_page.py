"""A kernel's page in a real browser, served compressed by the live daphne of tests/dashboard/test_browser.py:
where the kernel came from and its evidence come first, on the first screen; a long source shows its first lines
and the whole of it when asked for (runs/kernel_pages/views.py, static/js/kernel_source.js)."""

import hashlib
from pathlib import Path

import pytest

from tests.dashboard import test_browser as browser
from tests.dashboard.test_browser import ScriptedWorker, eval_payload, start_run_from_page

chromium, live_site, login = browser.chromium, browser.live_site, browser.login

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

# The released kernel, whose page was 1.26 MB of HTML and 27,800 px tall with its provenance below its source.
RELEASED = Path(__file__).resolve().parents[2] / "kernels" / "attention_fwd_sm90" / "attention_fwd_sm90.cu"
LAST_LINE = "// the last line of the long kernel"


def test_a_long_kernels_page_leads_with_its_provenance_and_shows_the_whole_source_on_demand(live_site, login):
    page = login("olga")
    page.set_viewport_size({"width": 1280, "height": 900})
    run_id = start_run_from_page(page, "openai:long-kernel")
    source = RELEASED.read_text() + LAST_LINE + "\n"
    payload = eval_payload(1.5)
    payload["kernel_source"] = payload["result"]["kernel_source"] = source
    worker = ScriptedWorker(live_site)
    try:
        assert worker.claim()["id"] == run_id
        worker.event(run_id, 0, "evaluation", payload)
    finally:
        worker.close()
    page.goto(f"{live_site['base']}/kernels/")
    sha = hashlib.sha256(source.encode()).hexdigest()
    href = page.get_attribute(f"#kernel-groups tr[data-sha='{sha}'] a", "href")
    response = page.goto(live_site["base"] + href)
    assert response.header_value("content-encoding") == "gzip"  # chromium asks for it; daphne serves it so
    boxes = page.evaluate("""() => Object.fromEntries(['provenance', 'download', 'lead-evaluation', 'source']
        .map((id) => [id, document.getElementById(id).getBoundingClientRect().top + window.scrollY]))""")
    assert boxes["provenance"] < boxes["lead-evaluation"] < boxes["source"], boxes
    assert boxes["download"] < 900, boxes  # where it came from and its download: on the first screen
    assert LAST_LINE not in page.inner_text("#source-body")
    assert page.locator("#source-body a[href^='#L-']").count() == 60
    page.click("#source-load")
    page.wait_for_selector(f"#source-body :text('{LAST_LINE}')")
    assert page.locator("#source-body a[href^='#L-']").count() == source.count("\n")
    assert page.locator("#source-load").is_hidden() and "The whole source" in page.inner_text("#source-extent")
