"""The spec's scenario features that attention_fwd's grid needs as data (issue #16, step 2): boolean values, a
name for a value in the id (`id_names`), symbols derived from each scenario's own (`[scenarios.derived]`); and
attention's 180 scenarios written as such a list in tasks/attention_fwd/, which the loader turns into exactly the
ids, parameters, FLOP and byte counts of the class task it replaced (the digests pinned in
test_attention_pinned.py)."""

import hashlib
import json

import pytest

from gpu_harness.taskscaffold import scaffold
from gpu_harness.taskspec import TaskSpecError, load_spec

from .test_attention_pinned import QUICK_SHA256, SCENARIOS_SHA256
from .test_taskspec_edges import edited, expect, line_of, problems_of


@pytest.fixture
def folder(tmp_path):
    return scaffold("demo_op", tmp_path)


def test_a_derived_symbol_is_computed_per_scenario_and_usable_in_ids_and_formulas(folder):
    edited(
        folder,
        ('id = "r{rows}_c{cols}_s{scale}"', 'id = "r{rows}_c{cols}_s{scale}_n{n}"'),
        ('quick = ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]', 'quick = ["r1_c1_s2.0_n1"]'),
        ("[[scenarios.product]]", '[scenarios.derived]\nn = "rows*cols"\nhalf = "n/2"\n\n[[scenarios.product]]'),
    )
    spec = load_spec(folder)
    first = spec.scenarios[0]
    assert first.id == "r1_c1_s2.0_n1" and first.params == {"rows": 1, "cols": 1, "scale": 2.0, "n": 1, "half": 0.5}
    assert [sc.params["n"] for sc in spec.scenarios[1:4]] == [7 * 33, 7 * 257, 7 * 1024]


def test_a_derived_symbol_that_cannot_be_computed_is_one_problem_of_its_line(folder):
    got = problems_of(
        folder, ("[[scenarios.product]]", '[scenarios.derived]\nbad = "rows/zero"\n\n[[scenarios.product]]')
    )
    derived = [p for p in got if p[1] == "scenarios.derived.bad"]
    assert derived == [
        (
            line_of(folder, 'bad = "rows/zero"'),
            "scenarios.derived.bad",
            "'rows/zero' on {'rows': 1, 'cols': 1, 'scale': 2.0}: \"no symbol 'zero'\" is not a number",
        )
    ]  # said once, for the first scenario, not once per scenario


def test_a_derived_symbol_a_scenario_also_gives_is_a_problem(folder):
    got = problems_of(folder, ("[[scenarios.product]]", '[scenarios.derived]\nrows = "cols"\n\n[[scenarios.product]]'))
    assert (
        line_of(folder, 'rows = "cols"'),
        "scenarios.derived.rows",
        "{'rows': 1, 'cols': 1, 'scale': 2.0}: rows is given by the scenario too",
    ) in got


def test_a_derived_formula_that_does_not_parse_is_a_problem(folder):
    with pytest.raises(TaskSpecError, match=r"scenarios\.derived\.x: 'rows\(\)'"):
        edited(folder, ("[[scenarios.product]]", '[scenarios.derived]\nx = "rows()"\n\n[[scenarios.product]]'))
        load_spec(folder)


def test_booleans_are_scenario_values_and_id_names_write_them(folder):
    edited(
        folder,
        ('id = "r{rows}_c{cols}_s{scale}"', 'id = "r{rows}_c{cols}_s{scale}_{causal}"\nid_names = { causal = '
         '{ true = "causal", false = "full" } }'),
        ("list = [{ rows = 1, cols = 1, scale = 2.0 }]", "list = [{ rows = 1, cols = 1, scale = 2.0, causal = true }]"),
        ('quick = ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]', 'quick = ["r1_c1_s2.0_causal"]'),
        ("scale = [0.5]", "scale = [0.5]\ncausal = [false]"),
    )  # fmt: skip
    spec = load_spec(folder)
    assert spec.scenarios[0].params["causal"] is True and spec.scenarios[0].id == "r1_c1_s2.0_causal"
    assert spec.scenarios[1].id == "r7_c33_s0.5_full" and spec.scenarios[1].params["causal"] is False


def test_a_value_id_names_does_not_name_is_a_problem(folder):
    expect(
        folder,
        ('id = "r{rows}_c{cols}_s{scale}"', 'id = "r{rows}_c{cols}_s{scale}"\nid_names = { rows = { 1 = "one" } }'),
        ('quick = ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]', 'quick = ["rone_c1_s2.0"]'),
        ("rows = [7, 128, 1000]", "rows = [7]"),
        ("cols = [33, 257, 1024]", "cols = [33]"),
        want=[("id_names", "scenarios.id_names", "{'rows': 7, 'cols': 33, 'scale': 0.5}: no name for rows = 7")],
    )


# ---- attention's grid as data ----


def test_attentions_180_scenarios_are_its_folders_list_in_the_class_tasks_order():
    from gpu_harness.tasks.attention_fwd import attention_task

    task = attention_task(device="cpu")
    scenarios = task.scenarios()
    blob = json.dumps([[s.id, s.params, s.flops, s.bytes] for s in scenarios], sort_keys=True).encode()
    assert hashlib.sha256(blob).hexdigest() == SCENARIOS_SHA256
    assert hashlib.sha256(json.dumps(task.quick_ids()).encode()).hexdigest() == QUICK_SHA256
    # and each scenario's parameters in the class's order (the dashboard's columns), softmax_scale derived last
    order = ["dtype", "batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim", "causal", "softmax_scale"]
    assert all(list(s.params) == order for s in scenarios)
