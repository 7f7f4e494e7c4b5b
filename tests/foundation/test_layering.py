"""The layers of docs/architecture.md, read from the source with ast (every import, also those inside functions
and under TYPE_CHECKING), so that a new import against them fails here and not in production:

    gpu_harness  <  questionbank  <  runs, kseek_site
    gpu_harness  <  agentloop            (agentloop may use questionbank's Django-free modules only)

and no module of gpu_harness imports, directly or through others, a module that imports it back.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("gpu_harness", "agentloop", "questionbank", "runs", "kseek_site")
BANK_PURE = {"questionbank", "questionbank.bank", "questionbank.selection", "questionbank.effectiveness"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """The modules `path` imports, absolute (a relative import resolved against its package); for `from X
    import name` both X and X.name, since `name` may be a submodule."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names)
    return found


def sources(package: str):
    for path in sorted((REPO / package).rglob("*.py")):
        if "migrations" not in path.parts:
            yield path


GRAPH = {module_name(path): imports_of(path) for package in PACKAGES for path in sources(package)}


def offenders(package: str, forbidden) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, names in GRAPH.items()
        if module == package or module.startswith(package + ".")
        for name in names
        if forbidden(name)
    )


def top(name: str) -> str:
    return name.split(".")[0]


def test_the_graph_sees_imports_inside_functions_and_relative_ones():
    # The readers of these rules: if the parser missed these, every test below would pass for nothing.
    assert "questionbank.selectors" in GRAPH["runs.services.runs"]  # an import inside a function
    assert "gpu_harness.result" in GRAPH["gpu_harness.report"]  # a relative import
    assert "django.db" in GRAPH["runs.models"]


def test_questionbank_imports_nothing_from_runs():
    assert offenders("questionbank", lambda name: top(name) in ("runs", "kseek_site", "agentloop")) == []


@pytest.mark.parametrize("package", ["gpu_harness", "agentloop"])
def test_the_gpu_host_packages_import_no_django(package):
    assert offenders(package, lambda name: top(name) in ("django", "channels", "runs", "kseek_site")) == []


def test_agentloop_uses_only_the_django_free_modules_of_the_bank():
    def impure(name: str) -> bool:  # `questionbank.bank.load_bank` is a name of a pure module
        return top(name) == "questionbank" and name not in BANK_PURE and name.rpartition(".")[0] not in BANK_PURE

    assert offenders("agentloop", impure) == []


def test_gpu_harness_is_the_lowest_layer():
    assert offenders("gpu_harness", lambda name: top(name) in ("agentloop", "questionbank", "runs")) == []


def test_the_dashboard_never_imports_torch():
    for package in ("runs", "questionbank", "kseek_site"):
        assert offenders(package, lambda name: top(name) == "torch") == []


def import_cycles(package: str) -> list[str]:
    """Each import edge of `package` that closes a cycle among its modules. The package itself (its top
    __init__) is left out as a target, since every submodule is imported through it (`from . import verdict` names
    it) without using what it defines; a subpackage's __init__ (runs.services) is a module like any other."""
    edges = {
        m: {n for n in names if n in GRAPH and top(n) == package and n != package}
        for m, names in GRAPH.items()
        if top(m) == package
    }

    def reaches(start: str, target: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            for name in edges.get(todo.pop(), ()):
                if name == target:
                    return True
                if name not in seen:
                    seen.add(name)
                    todo.append(name)
        return False

    return sorted(f"{m} -> {n} -> ... -> {m}" for m, names in edges.items() for n in names if reaches(n, m))


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_part_of_an_import_cycle(package):
    # Imports inside functions count: one there hides a cycle rather than removing it (issue 37, item 4).
    assert import_cycles(package) == []


def test_a_cycle_through_a_function_level_import_is_found(monkeypatch):
    monkeypatch.setitem(GRAPH, "runs.selectors_bank", GRAPH["runs.selectors_bank"] | {"runs.demo"})
    assert "runs.demo -> runs.services -> ... -> runs.demo" in import_cycles("runs")


def test_report_sits_above_result():
    assert "gpu_harness.result" in GRAPH["gpu_harness.report"]
    assert not {"gpu_harness.report", "gpu_harness.report.render_table"} & GRAPH["gpu_harness.result"]


# ---- the page areas of runs (issue 37, item 4) ----------------------------------------------------------------
# Each area is the page code of one thing users see; the models, services and the pieces several areas share stay at
# the top of `runs/` (docs/architecture.md, "Folders").
AREAS = ("runs.run_pages", "runs.review", "runs.kernel_pages", "runs.task_pages", "runs.worker_pages")

# The only reads one area makes of another's selectors (module, the module it imports): each is a page that shows
# the other area's data, and says why. An area never imports another's views.
CROSS_AREA_READS = {
    ("runs.run_pages.views", "runs.worker_pages.selectors"): (
        "a queued run's page and the runs list say why no worker has it yet: the hosts' state"
    ),
    ("runs.run_pages.views", "runs.kernel_pages.selectors"): "a run's page names the kernels it developed",
    ("runs.review.views", "runs.run_pages.selectors"): (
        "the review queue folds a question's last steps to the feed's own lines (step_summary: an evaluation as its "
        "Evaluations table writes it)"
    ),
    ("runs.run_pages.selectors_compare_detail", "runs.kernel_pages.evidence"): (
        "the compare page lays out its grid of the best kernels by the evidence view's grid rule"
    ),
    ("runs.run_pages.selectors_compare_detail", "runs.kernel_pages.selectors_evidence"): (
        "and writes its cells (parameters, tones, column headers) as the evidence view does"
    ),
    ("runs.task_pages.selectors", "runs.worker_pages.selectors"): (
        "the task pages say how many connected workers serve each task's target"
    ),
}

# The modules outside the areas that import an area: the URLs (they name every view), the commands that read a
# page's rows.
AREA_USERS = {("runs.urls", area) for area in AREAS} | {
    ("runs.management.commands.start_suite_study", "runs.task_pages.selectors_suites"),
    ("runs.management.commands.sync_tasks", "runs.task_pages.selectors_suites"),
}


def area_of(module: str) -> str | None:
    return next((area for area in AREAS if module == area or module.startswith(area + ".")), None)


def imported_modules(module: str) -> set[str]:
    """The modules of ours `module` imports (`from X import name` is X, or X.name where that is a module)."""
    return {name if name in GRAPH else name.rpartition(".")[0] for name in GRAPH[module]} & GRAPH.keys()


def area_edges() -> set[tuple[str, str]]:
    """(module, imported module) for each import of an area's module by a module of another area or of none."""
    return {
        (module, target)
        for module in GRAPH
        if top(module) == "runs"
        for target in imported_modules(module)
        if area_of(target) and area_of(target) != area_of(module)
    }


def test_every_area_is_a_package_with_its_views():
    for area in AREAS:
        assert area in GRAPH, f"{area} has no __init__.py"
        assert f"{area}.views" in GRAPH


def views_crossings() -> list[str]:
    return sorted(
        f"{m} imports {t}" for m, t in area_edges() if area_of(m) and t.rpartition(".")[2].startswith("views")
    )


def test_no_area_imports_another_areas_views():
    assert views_crossings() == []


def test_an_area_reads_another_only_where_listed():
    crossing = {(m, t) for m, t in area_edges() if area_of(m)}
    assert crossing - CROSS_AREA_READS.keys() == set(), "a new cross-area read: list it with its reason, or move it"
    assert CROSS_AREA_READS.keys() - crossing == set(), "a listed cross-area read no longer exists: drop it"


def test_the_shared_modules_import_no_area():
    # Below the areas: the models, services and shared pieces (permissions, forms, events, the shared selectors...).
    outside = {(m, t) for m, t in area_edges() if not area_of(m)}
    assert {(m, t) for m, t in outside if (m, t) not in AREA_USERS and (m, area_of(t)) not in AREA_USERS} == set()
    assert AREA_USERS <= outside | {(m, area_of(t)) for m, t in outside}, "a listed user no longer imports it"


def test_an_area_crossing_would_be_found(monkeypatch):
    monkeypatch.setitem(GRAPH, "runs.review.views", GRAPH["runs.review.views"] | {"runs.run_pages.views_feed"})
    assert views_crossings() == ["runs.review.views imports runs.run_pages.views_feed"]


# ---- what the dashboard takes from the GPU hosts' packages (docs/architecture.md, "Folders": runs' imports) ------
# The server imports of agentloop and gpu_harness only the modules the map names, each for the reason given here: the
# agent's command line, the harness's judging or the worker's client are no part of the dashboard. The packages
# themselves (`from gpu_harness import get_task`) count as their __init__.
DASHBOARD_USES = {
    "agentloop.protocol": "the protocol's words: kinds, statuses, limits, an event's line, the built-in models",
    "agentloop.event_types": "each kind's payload fields, which the event parser checks",
    "agentloop.fork": "a fork's cut, pure",
    "agentloop.json_safe": "strict JSON and UTF-8 text, pure: the socket's answers, a refusal's text, a GPU name",
    "gpu_harness.figures": "every figure of a verdict",
    "gpu_harness.result": "the verdict's statuses (EvaluationStatus in runs/models.py)",
    "gpu_harness.tasks": "the task list and where task folders are, in sync_tasks",
    "gpu_harness.tasks.summary": "each task's summary, in sync_tasks",
    "gpu_harness.kernelbench_suite": "suite.json's words, in runs/suite_manifest.py",
}
# One module's own use: `serve` asks whether bubblewrap works before it starts the local worker.
DASHBOARD_USES_IN = {("runs.management.commands.serve", "agentloop.sandbox")}
DASHBOARD = ("runs", "kseek_site", "questionbank")
GPU_HOST = ("agentloop", "gpu_harness")


def dashboard_reaches() -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module in GRAPH
        if top(module) in DASHBOARD
        for target in imported_modules(module)
        if top(target) in GPU_HOST and target not in GPU_HOST
        if target not in DASHBOARD_USES and (module, target) not in DASHBOARD_USES_IN
    )


def test_the_dashboard_imports_of_the_gpu_hosts_packages_only_what_the_map_names():
    assert dashboard_reaches() == [], "name it in docs/architecture.md and DASHBOARD_USES, or import what is named"


def test_a_dashboard_import_of_the_agents_command_line_would_be_found(monkeypatch):
    monkeypatch.setitem(GRAPH, "runs.model_options", GRAPH["runs.model_options"] | {"agentloop.cli"})
    assert dashboard_reaches() == ["runs.model_options imports agentloop.cli"]


def test_the_protocols_words_and_the_figures_import_nothing_else_of_ours():
    # Both halves import these (docs/architecture.md): they stay light, with nothing of the loop or the judge.
    assert imported_modules("agentloop.protocol") <= {"gpu_harness", "gpu_harness.figures"}
    assert imported_modules("agentloop.event_types") == set()
    assert imported_modules("gpu_harness.figures") <= {"gpu_harness", "gpu_harness.figure_rates"}
    assert imported_modules("gpu_harness.figure_rates") == set()


# ---- torch at import time (docs/architecture.md, "Folders": gpu_harness imports torch lazily) --------------------
# A dashboard host and a CPU worker have no torch: every module of the harness, the agent and kernels/load.py imports
# it inside the functions that use it. The exceptions never load in the judge's process: the import probes run as
# scripts in a child process, and gpumode_runtime.py is what an imported task's reference.py calls.
TORCH_AT_THE_TOP = {
    "gpu_harness.kernelbench_probe",
    "gpu_harness.gpumode_probe",
    "gpu_harness.flashinfer_probe",
    "gpu_harness.gpumode_runtime",
}


def module_level_imports(tree: ast.Module) -> set[str]:
    """What a module imports when it is imported: its body's imports, also under `if`/`try`/`with` and in class
    bodies, but not inside functions nor under `if TYPE_CHECKING:` (absolute names only: torch is no relative
    import)."""
    found: set[str] = set()

    def walk(nodes):
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level:
                found.add(node.module or "")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                walk(node.orelse)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    walk(getattr(node, field, None) or [])

    walk(tree.body)
    return found


def torch_at_import(paths) -> list[str]:
    return sorted(
        name
        for name, path in paths
        if name not in TORCH_AT_THE_TOP
        and any(top(i) == "torch" for i in module_level_imports(ast.parse(path.read_text(encoding="utf-8"))))
    )


def test_torch_is_imported_inside_functions_only():
    paths = [(module_name(p), p) for package in GPU_HOST for p in sources(package)]
    paths.append(("kernels.load", REPO / "kernels" / "load.py"))
    assert torch_at_import(paths) == []
    assert all(name in GRAPH for name in TORCH_AT_THE_TOP), "an exception that no longer exists: drop it"


def test_a_module_level_torch_import_would_be_found(tmp_path):
    (tmp_path / "eager.py").write_text("try:\n    import torch\nexcept ImportError:\n    torch = None\n")
    (tmp_path / "lazy.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n\ndef f():\n    import torch\n"
    )
    found = torch_at_import([("eager", tmp_path / "eager.py"), ("lazy", tmp_path / "lazy.py")])
    assert found == ["eager"]
