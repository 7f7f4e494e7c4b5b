"""How an evaluation's scenarios are laid out as a grid, from the scenarios' own parameters (no Django here).

The rule, written once so that a new task gets its grid with no page code:

- A parameter with one value across the scenarios is no axis: the page says it once above the grid.
- Column groups: the parameters with the fewest distinct values (at most COLUMN_VALUES_MAX each), fewest first,
  as long as their combinations stay at most COLUMNS_MAX and at least one varying parameter is left for rows
  (attention: causal x dtype, four columns).
- Rows: every other varying parameter, one readable column each. The two with the most distinct values lead
  (they are the row axes, and the rows are sorted by them first); the rest follow in the task's order
  (attention: seqlen_q, seqlen_k, then batch, heads, head_dim...).
- Each cell holds one scenario. Where two scenarios would share one, the last column group moves to the rows
  until none does; where scenarios differ in no parameter at all, the scenario id becomes a row axis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

COLUMN_VALUES_MAX = 4
COLUMNS_MAX = 8
LEADING_ROW_AXES = 2
SCENARIO_AXIS = "scenario"  # the pseudo-parameter of last resort: the scenario's id


@dataclass
class Grid:
    row_axes: list[str]  # the parameters of a row, in the order they are shown and sorted by
    column_axes: list[str]  # the parameters whose combinations are the columns
    constant: dict  # parameter -> its one value
    columns: list[tuple]  # each column's values of column_axes, in order
    rows: list[tuple]  # each row's values of row_axes, in order
    cells: dict[tuple[int, int], str] = field(default_factory=dict)  # (row index, column index) -> scenario id

    def cell(self, row: int, column: int) -> str | None:
        return self.cells.get((row, column))


def _sort_key(value) -> tuple:
    # Numbers numerically and before words; booleans as words (False before True); None last.
    if value is None:
        return (3, "")
    if isinstance(value, bool):
        return (1, str(value))
    if isinstance(value, (int, float)):
        return (0, value)
    return (2, str(value))


def _hashable(value):
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def _value(scenario: dict, name: str):
    if name == SCENARIO_AXIS:
        return scenario["id"]
    return _hashable((scenario.get("params") or {}).get(name))


def _collides(scenarios: list[dict], row_axes: list[str], column_axes: list[str]) -> bool:
    seen = set()
    for s in scenarios:
        key = (tuple(_value(s, a) for a in row_axes), tuple(_value(s, a) for a in column_axes))
        if key in seen:
            return True
        seen.add(key)
    return False


def grid_axes(parameters: list[str], scenarios: list[dict]) -> tuple[list[str], list[str], dict]:
    """(row axes, column axes, constant parameters) for `scenarios` ({"id", "params"} each); `parameters` is the
    task's order of its parameter names (any a scenario has beyond it follow in name order)."""
    names = list(dict.fromkeys([*parameters, *sorted({k for s in scenarios for k in s.get("params") or {}})]))
    distinct = {n: len({_value(s, n) for s in scenarios}) for n in names}
    constant = {n: _value(scenarios[0], n) for n in names if distinct[n] == 1} if scenarios else {}
    varying = [n for n in names if distinct[n] > 1]
    order = {n: i for i, n in enumerate(names)}

    columns: list[str] = []
    for name in sorted((n for n in varying if distinct[n] <= COLUMN_VALUES_MAX), key=lambda n: (distinct[n], order[n])):
        if prod(distinct[c] for c in [*columns, name]) <= COLUMNS_MAX and len(varying) - len(columns) > 1:
            columns.append(name)
    rest = [n for n in varying if n not in columns]
    leading = sorted(rest, key=lambda n: (-distinct[n], order[n]))[:LEADING_ROW_AXES]
    rows = leading + [n for n in rest if n not in leading]
    while columns and _collides(scenarios, rows, columns):
        moved = columns.pop()
        rows.append(moved)
    if _collides(scenarios, rows, columns):
        rows.append(SCENARIO_AXIS)
    return rows, columns, constant


def scenario_grid(parameters: list[str], scenarios: list[dict]) -> Grid:
    """The grid of `scenarios` by the rule above: its axes, its rows and columns sorted by value, and which
    scenario sits in each cell (a combination no scenario has is an empty cell)."""
    row_axes, column_axes, constant = grid_axes(parameters, scenarios)

    def row_of(s):
        return tuple(_value(s, a) for a in row_axes)

    def column_of(s):
        return tuple(_value(s, a) for a in column_axes)

    rows = sorted({row_of(s) for s in scenarios}, key=lambda r: [_sort_key(v) for v in r])
    columns = sorted({column_of(s) for s in scenarios}, key=lambda c: [_sort_key(v) for v in c])
    row_index = {r: i for i, r in enumerate(rows)}
    column_index = {c: i for i, c in enumerate(columns)}
    cells = {(row_index[row_of(s)], column_index[column_of(s)]): s["id"] for s in scenarios}
    return Grid(row_axes, column_axes, constant, columns, rows, cells)
