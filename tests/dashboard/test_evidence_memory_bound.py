"""The evidence view of a real H200 verdict of the released attention kernel (docs/device-runs/, issue 36): the
decode cell is memory-bound, so its row and its hover lead with GB/s, its share of the measured bandwidth and of the
H200's 4.8 TB/s, and give TFLOP/s after; a FlashAttention grid cell still leads with TFLOP/s; the page says the rule
(the ridge point of the measured peaks)."""

import html as html_lib
import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from gpu_harness import figures, get_task
from gpu_harness.tasks.summary import task_summary
from runs.services import evaluation_record, kernel_record, task_upsert
from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db
RUN = Path(__file__).resolve().parents[2] / "docs/device-runs/2026-12-04_libraries_attention_fwd_sm90_quick_fa3.json"
DECODE = "fp16_b8_sq1_sk4096_h16x16_d128_causal"
GRID = "bf16_b8_sq2048_sk2048_h16x16_d128_full"


@pytest.fixture
def page(client):
    spec = task_summary(get_task("attention_fwd"))
    task = task_upsert(
        name="attention_fwd",
        target="cuda-sm90",
        starting_kernel="// naive\n",
        goal_baseline=spec["goal"]["baseline"],
        goal_speedup=spec["goal"]["speedup"],
        title="attention forward",
        scenario_ids=[s["id"] for s in spec["scenarios"]],
        spec=spec,
    )
    verdict = json.loads(RUN.read_text())
    kernel = kernel_record(task=task, source=verdict["kernel_source"], filename="attention_fwd_sm90.cu", run=None)
    evaluation = evaluation_record(kernel=kernel, result=verdict, run=None)
    client.force_login(make_user("vera"))
    return html_lib.unescape(client.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()), verdict


def _bytes_moved(p: dict) -> int:
    """Q, K, V read and O written once (2 bytes an element), the fp32 LSE written once."""
    q = o = p["batch"] * p["seqlen_q"] * p["heads_q"] * p["head_dim"]
    k = v = p["batch"] * p["seqlen_k"] * p["heads_kv"] * p["head_dim"]
    return 2 * (q + k + v + o) + 4 * p["batch"] * p["heads_q"] * p["seqlen_q"]


def _table(html: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The folded table of every scenario: its headers, and each row's cells by header."""
    table = re.search(r'<table class="scenarios">(.*?)</table>', html, re.S).group(1)
    head = re.findall(r"<th>(.*?)</th>", table)
    rows = {}
    for sid, row in re.findall(r'<tr class="outcome-[^"]*" data-scenario="([^"]+)">(.*?)</tr>', table, re.S):
        texts = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows[sid] = dict(zip(head, texts))
    return head, rows


def _sig(value, suffix=""):
    return figures.format_significant(value, suffix=suffix)


def test_the_decode_cell_leads_with_gbps_and_its_share_of_the_measured_and_the_h200s_bandwidth(page):
    html, verdict = page
    decode = next(s for s in verdict["scenarios"] if s["id"] == DECODE)
    gbps = _bytes_moved(decode["params"]) / (decode["time_ms"] * 1e-3) / 1e9
    head, rows = _table(html)
    assert head[head.index("Time (ms)") :][:6] == ["Time (ms)", "Bound", "Rate", "% peak", "% nominal", "Also"]
    row = rows[DECODE]
    assert row["Bound"] == "memory" and row["Rate"] == _sig(gbps, " GB/s")
    assert row["% peak"] == _sig(gbps / verdict["peaks"]["peak_gbps"] * 100, "%")
    assert row["% nominal"] == _sig(gbps / 4800 * 100, "%")  # the H200's HBM: 4.8 TB/s
    tflops_share = _sig(decode["tflops"] / verdict["peaks"]["peak_tflops"] * 100, "%")
    assert row["Also"] == f"{_sig(decode['tflops'], ' TFLOP/s')} ({tflops_share})"
    # the grid cell's details on hover lead with the bound rate too
    title = re.search(rf'data-scenario="{DECODE}" title="([^"]*)"', html).group(1)
    assert f"memory-bound: {_sig(gbps)} GB/s ({row['% peak']} of peak, {row['% nominal']} of nominal)" in title


def test_a_flashattention_grid_cell_still_leads_with_tflops_and_the_page_states_the_rule(page):
    html, verdict = page
    grid = next(s for s in verdict["scenarios"] if s["id"] == GRID)
    _, rows = _table(html)
    row = rows[GRID]
    assert row["Bound"] == "compute" and row["Rate"] == _sig(grid["tflops"], " TFLOP/s")
    assert row["% peak"] == _sig(grid["tflops"] / verdict["peaks"]["peak_tflops"] * 100, "%") and not row["% nominal"]
    title = re.search(rf'data-scenario="{GRID}" title="([^"]*)"', html).group(1)
    assert f"compute-bound: {_sig(grid['tflops'])} TFLOP/s" in title
    ridge = verdict["peaks"]["peak_tflops"] * 1e12 / (verdict["peaks"]["peak_gbps"] * 1e9)
    note = re.search(r'id="peaks-note">(.*?)</p>', html, re.S).group(1)
    assert f"Ridge point {_sig(ridge)} FLOP/byte" in note and "memory-bound" in note
    assert "Nominal memory bandwidth of the NVIDIA H200: 4800 GB/s" in note
