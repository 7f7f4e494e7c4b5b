"""A view never queries models itself (docs/architecture.md, "How to add a page"): its reads are selectors'. Read
from the source with ast, so that a query added to a view fails here: a model manager (`X.objects`), the shortcuts
that query (`get_object_or_404`), or a queryset's own methods called in a view module."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Every view module: the page areas' (runs/<area>/views*.py) and the shared ones at the top (runs/views_assets.py).
VIEWS = sorted((REPO / "runs").rglob("views*.py"))
# As many as were moved into the areas (issue 37, item 4), so that a glob that found none, or missed an area, fails.
VIEW_MODULES = 13
# Methods only a queryset or a manager has (`get`, `count`, `first` are left out: dicts and lists have them too).
QUERYSET_METHODS = {
    "filter",
    "exclude",
    "select_related",
    "prefetch_related",
    "annotate",
    "aggregate",
    "values_list",
    "order_by",
    "only",
    "defer",
    "select_for_update",
    "bulk_create",
    "get_or_create",
    "update_or_create",
}
QUERYING_SHORTCUTS = {"get_object_or_404", "get_list_or_404"}


def queries_in(source: str) -> list[str]:
    """Each place in `source` that queries models: 'line N: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "objects":
            found.append(f"line {node.lineno}: .objects")
        elif isinstance(node, ast.Attribute) and node.attr in QUERYSET_METHODS and isinstance(node.ctx, ast.Load):
            found.append(f"line {node.lineno}: .{node.attr}(")
        elif isinstance(node, ast.Name) and node.id in QUERYING_SHORTCUTS:
            found.append(f"line {node.lineno}: {node.id}")
        elif isinstance(node, ast.alias) and node.name in QUERYING_SHORTCUTS:
            found.append(f"import of {node.name}")
    return found


def test_the_rule_finds_each_kind_of_query():
    source = """
from django.shortcuts import get_object_or_404
def view(request, run_id):
    run = get_object_or_404(Run, pk=run_id)
    rows = Step.objects.all()
    newest = run.steps.order_by("-seq")
"""
    assert sorted(queries_in(source)) == [
        "import of get_object_or_404",
        "line 4: get_object_or_404",
        "line 5: .objects",
        "line 6: .order_by(",
    ]


def test_no_view_queries_models_itself():
    assert len(VIEWS) == VIEW_MODULES, [str(path.relative_to(REPO)) for path in VIEWS]
    offenders = {str(path.relative_to(REPO)): queries_in(path.read_text(encoding="utf-8")) for path in VIEWS}
    assert {name: found for name, found in offenders.items() if found} == {}
