"""The grid rule of runs/kernel_pages/evidence.py on tasks shaped like attention, matmul and a one-parameter task."""

import itertools

from runs.kernel_pages.evidence import SCENARIO_AXIS, grid_axes, scenario_grid


def scenarios_of(params_list):
    return [{"id": f"s{i}", "params": p} for i, p in enumerate(params_list)]


def attention_like():
    params = [
        {"dtype": dtype, "seqlen": seqlen, "head_dim": head_dim, "causal": causal, "heads": 16}
        for dtype, seqlen, head_dim, causal in itertools.product(
            ["bf16", "fp16"], [512, 1024, 2048, 4096, 8192], [64, 128, 256], [False, True]
        )
    ]
    return ["dtype", "seqlen", "head_dim", "causal", "heads"], scenarios_of(params)


def test_attention_like_rows_are_seqlen_by_head_dim_and_columns_causal_by_dtype():
    names, scenarios = attention_like()
    rows, columns, constant = grid_axes(names, scenarios)
    assert rows == ["seqlen", "head_dim"]
    assert columns == ["dtype", "causal"]
    assert constant == {"heads": 16}
    grid = scenario_grid(names, scenarios)
    assert len(grid.rows) == 15 and len(grid.columns) == 4 and len(grid.cells) == len(scenarios)
    assert grid.rows[0] == (512, 64) and grid.rows[-1] == (8192, 256)  # sorted numerically, not as text
    assert grid.columns == [("bf16", False), ("bf16", True), ("fp16", False), ("fp16", True)]
    # Each cell holds the scenario with exactly its row's and column's values.
    by_id = {s["id"]: s["params"] for s in scenarios}
    for (r, c), sid in grid.cells.items():
        params = by_id[sid]
        assert (params["seqlen"], params["head_dim"]) == grid.rows[r]
        assert (params["dtype"], params["causal"]) == grid.columns[c]


def test_matmul_like_has_one_row_per_scenario_and_one_column():
    names = ["m", "n", "k"]
    scenarios = scenarios_of(
        [
            {"m": m, "n": n, "k": k}
            for m, n, k in [(1, 1, 1), (64, 64, 64), (7, 13, 5), (512, 256, 128), (8, 1000, 1000)]
        ]
    )
    rows, columns, _ = grid_axes(names, scenarios)
    assert columns == [] and set(rows) == {"m", "n", "k"}
    grid = scenario_grid(names, scenarios)
    assert len(grid.columns) == 1 and len(grid.rows) == len(scenarios) == len(grid.cells)
    assert [r[rows.index("m")] for r in grid.rows] == sorted(s["params"]["m"] for s in scenarios)


def test_one_parameter_task_keeps_it_as_the_row_even_with_few_values():
    scenarios = scenarios_of([{"rows": n} for n in (1, 2, 3)])
    rows, columns, constant = grid_axes(["rows"], scenarios)
    assert (rows, columns, constant) == (["rows"], [], {})
    assert scenario_grid(["rows"], scenarios).rows == [(1,), (2,), (3,)]


def test_a_column_group_that_would_put_two_scenarios_in_one_cell_becomes_a_row():
    # Two scenarios differ only in a two-valued parameter that is also a column: the grid must still hold both.
    scenarios = scenarios_of(
        [{"n": n, "dtype": d, "layout": lay} for n in (1, 2, 3) for d in ("a", "b") for lay in ("r", "c")]
    )
    scenarios.append({"id": "dup", "params": {"n": 1, "dtype": "a", "layout": "r"}})
    rows, columns, _ = grid_axes(["n", "dtype", "layout"], scenarios)
    assert SCENARIO_AXIS in rows  # identical parameters: only the id tells them apart
    grid = scenario_grid(["n", "dtype", "layout"], scenarios)
    assert len(grid.cells) == len(scenarios)


def test_parameters_beyond_the_task_order_still_count():
    scenarios = scenarios_of([{"n": n, "extra": e} for n in (1, 2, 3, 4, 5) for e in (0, 1)])
    rows, columns, _ = grid_axes(["n"], scenarios)
    assert rows == ["n"] and columns == ["extra"]


def test_column_headers_span_the_columns_that_share_a_value():
    from runs.kernel_pages.selectors_evidence import column_headers

    columns = [("bf16", False), ("bf16", True), ("fp16", False), ("fp16", True)]
    assert column_headers(["dtype", "causal"], columns) == [
        [("dtype bf16", 2), ("dtype fp16", 2)],
        [("causal no", 1), ("causal yes", 1), ("causal no", 1), ("causal yes", 1)],
    ]
    assert column_headers([], [()]) == [[("speed-up", 1)]]
