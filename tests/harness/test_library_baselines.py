"""Issue 35 item 1 and issue 36 item 1, on the CPU: baselines a task marks as libraries, the harness's
"best_library" figure (the fastest of them on each scenario, with its interval), the GPU tasks' goals naming it,
QuACK's and FA3's clear n/a notes (a shape refused, a module absent, fp16 on the fa3-fwd wheel), and the library
versions an evaluation's baseline cache is keyed on."""

import importlib.util
import json
import shutil
import sys
import types
from pathlib import Path

import pytest

from gpu_harness import evaluate, figures
from gpu_harness.report import render_table
from gpu_harness.tasks import get_task
from gpu_harness.tasks.data_task import _import_note, module_version
from gpu_harness.tasks.libraries import IMPORT_MESSAGE_CHARS
from gpu_harness.taskspec import TaskSpecError, load_spec

from .conftest import needs_gxx

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"


# ---- the figure ----


def _scenario(medians: dict, intervals: dict | None = None) -> dict:
    return {"baseline_ms": medians, "baseline_ci_ms": intervals or {}}


def test_best_library_is_the_fastest_library_that_ran_the_scenario():
    s = _scenario({"eager": 2.0, "quack": 0.5, "naive": 0.1, "compile": None})
    best = figures.best_library(s, ["eager", "compile", "quack"])
    # naive is faster still, but it is no library; compile did not run the scenario (None)
    assert best == {"name": "quack", "ms": 0.5, "interval": None}


def test_best_library_interval_is_the_least_low_and_the_least_high():
    s = _scenario({"eager": 1.0, "quack": 1.1}, {"eager": [0.9, 1.3], "quack": [1.05, 1.2]})
    assert figures.best_library(s, ["eager", "quack"]) == {"name": "eager", "ms": 1.0, "interval": [0.9, 1.2]}
    # a library timed without an interval leaves the best library without one
    s = _scenario({"eager": 1.0, "quack": 1.1}, {"eager": [0.9, 1.3]})
    assert figures.best_library(s, ["eager", "quack"])["interval"] is None


def test_best_library_is_none_where_no_library_ran_the_scenario():
    assert figures.best_library(_scenario({"quack": None, "naive": 1.0}), ["quack"]) is None
    assert figures.best_library({}, ["quack"]) is None


def test_the_speedup_interval_over_the_best_library_holds_its_point():
    # the harness writes the best library as one more baseline; the interval rule then reads it like any other
    s = {
        "correct": True,
        "time_ms": 0.5,
        "time_ci_ms": [0.45, 0.55],
        "baseline_ms": {figures.BEST_LIBRARY: 1.0},
        "baseline_ci_ms": {figures.BEST_LIBRARY: [0.9, 1.2]},
        "speedup": {figures.BEST_LIBRARY: 2.0},
    }
    low, high = figures.scenario_interval(s, figures.BEST_LIBRARY)
    assert low == pytest.approx(0.9 / 0.55) and high == pytest.approx(1.2 / 0.45)


# ---- task.toml: which baselines are libraries, and the goal ----


@pytest.mark.parametrize(
    ("task", "libraries"),
    [
        ("softmax_rows", ["eager", "compile", "quack"]),
        ("rmsnorm", ["eager", "compile", "functional", "quack"]),
        ("gemm_bias_gelu", ["eager", "epilogue", "compile"]),
        ("attention_fwd", ["cudnn", "flash", "fa3", "fa4"]),
    ],
)
def test_the_gpu_tasks_mark_their_libraries(task, libraries):
    spec = load_spec(TASKS / task)
    assert list(spec.libraries) == libraries and set(libraries) <= set(spec.default_baselines)


@pytest.mark.parametrize("task", ["softmax_rows", "rmsnorm", "gemm_bias_gelu"])
def test_the_data_tasks_goal_is_the_best_library_not_eager(task):
    spec = load_spec(TASKS / task)
    assert (spec.goal_baseline, spec.goal_speedup) == ("best_library", 1.0)
    assert get_task(task).goal == {"baseline": "best_library", "speedup": 1.0}


def _task_copy(tmp_path: Path, name: str, edit) -> Path:
    folder = tmp_path / name
    shutil.copytree(TASKS / "matmul_cpu", folder)
    text = (folder / "task.toml").read_text().replace("../../kernels/", f"{REPO}/kernels/")
    (folder / "task.toml").write_text(edit(text))
    return folder


def _problems(folder: Path) -> list[str]:
    with pytest.raises(TaskSpecError) as e:
        load_spec(folder)
    return [str(p) for p in e.value.problems]


def test_a_goal_of_best_library_needs_a_library(tmp_path):
    folder = _task_copy(tmp_path, "nolib", lambda t: t.replace('baseline = "naive"', 'baseline = "best_library"'))
    assert any("needs baselines marked library = true" in p for p in _problems(folder))


def test_no_baseline_may_take_the_best_librarys_name(tmp_path):
    folder = _task_copy(
        tmp_path,
        "clash",
        lambda t: t.replace('numpy = { function = "numpy_matmul" }', 'best_library = { function = "numpy_matmul" }'),
    )
    assert any("the harness's own figure" in p for p in _problems(folder))


# ---- n/a notes: a module absent, alternatives, a shape refused ----


def test_requires_alternatives_need_only_one_module():
    assert _import_note((("no_such_module_kseek", "math"),)) is None
    assert (
        _import_note((("no_such_module_kseek",),)) == "no_such_module_kseek does not import here (ModuleNotFoundError)"
    )
    assert _import_note((("no_such_a_kseek", "no_such_b_kseek"),)) == (
        "neither no_such_a_kseek nor no_such_b_kseek imports here (ModuleNotFoundError)"
    )


def _module_raising(tmp_path, monkeypatch, name: str, body: str) -> str:
    """A module `name` whose import runs `body` (a fresh one: nothing of an earlier import is kept)."""
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_a_note_names_what_a_failed_import_said_not_only_its_type(tmp_path, monkeypatch):
    # a library's native part failing inside the child's sandbox gave "OSError" alone (flash-attn-4, an H200)
    module = _module_raising(
        tmp_path, monkeypatch, "kseek_native_lib", 'raise OSError("libfoo.so: cannot open shared object file")\n'
    )
    assert _import_note(((module,),)) == (
        "kseek_native_lib does not import here (OSError: libfoo.so: cannot open shared object file)"
    )


def test_a_note_names_a_missing_dependency_but_not_the_missing_module_itself(tmp_path, monkeypatch):
    module = _module_raising(tmp_path, monkeypatch, "kseek_needs_dep", "import kseek_absent_dependency\n")
    assert _import_note(((module,),)) == (
        "kseek_needs_dep does not import here (ModuleNotFoundError: No module named 'kseek_absent_dependency')"
    )
    # the module, or its package, absent: its name is already the note's first words
    assert (
        _import_note((("kseek_absent_pkg.sub",),)) == "kseek_absent_pkg.sub does not import here (ModuleNotFoundError)"
    )


def test_a_notes_message_is_its_first_line_cut_short(tmp_path, monkeypatch):
    long_line = "x" * 500
    module = _module_raising(
        tmp_path, monkeypatch, "kseek_long_error", f'raise ImportError("{long_line}\\nsecond line")\n'
    )
    note = _import_note(((module,),))
    assert note == f"kseek_long_error does not import here (ImportError: {'x' * IMPORT_MESSAGE_CHARS})"
    assert "second line" not in note
    # an exception without a message keeps its type alone
    bare = _module_raising(tmp_path, monkeypatch, "kseek_bare_error", "raise RuntimeError()\n")
    assert _import_note(((bare,),)) == "kseek_bare_error does not import here (RuntimeError)"


@pytest.mark.skipif(importlib.util.find_spec("quack") is not None, reason="QuACK is installed here")
@pytest.mark.parametrize("task", ["softmax_rows", "rmsnorm"])
def test_quack_is_na_with_a_note_where_it_is_not_installed(task):
    notes = get_task(task).baseline_availability(["quack", "eager"])
    assert notes["eager"] is None
    assert (
        notes["quack"]
        == f"quack.{'softmax' if task == 'softmax_rows' else 'rmsnorm'} does not import here (ModuleNotFoundError)"
    )


def _reference(task: str):
    spec = importlib.util.spec_from_file_location(f"_ref_{task}", TASKS / task / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quack_refuses_rows_it_cannot_load_with_the_reason():
    torch = pytest.importorskip("torch")
    x = torch.zeros(2, 4097, dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="row length divisible by 8.*cols=4097"):
        _reference("softmax_rows").quack_softmax(x, x, 2, 4097)
    w = torch.ones(3333, dtype=torch.bfloat16)
    x = torch.zeros(2, 3333, dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="row length divisible by 8.*hidden=3333"):
        _reference("rmsnorm").quack_rmsnorm(x, w, x, 2, 3333, 1e-6)


def test_the_returning_library_baselines_compute_the_task():
    torch = pytest.importorskip("torch")
    gemm = _reference("gemm_bias_gelu")
    a, w, bias = torch.randn(5, 7), torch.randn(3, 7), torch.randn(3)
    exact = gemm.reference(a.double(), w.double(), bias.double(), 5, 3, 7)
    tanh_form = gemm.cublaslt_epilogue(a, w, bias, None, 5, 3, 7)  # the tanh GELU: close to the exact one
    assert torch.allclose(tanh_form.double(), exact, atol=2e-3)
    x, weight = torch.randn(4, 16), torch.rand(16)
    rms = _reference("rmsnorm")
    out = rms.functional_rmsnorm(x, weight, None, 4, 16, 1e-6)
    assert torch.allclose(out.double(), rms.reference(x.double(), weight.double(), 4, 16, 1e-6), atol=1e-5)


# ---- FA3 under either module name ----


@pytest.fixture
def fake_fa3(monkeypatch):
    """A stand-in fa3-fwd wheel (module fa3_fwd_interface) that records its calls; flash_attn_interface absent."""
    calls = []
    module = types.ModuleType("fa3_fwd_interface")

    def flash_attn_func(q, k, v, softmax_scale=None, causal=False):
        calls.append((q.dtype, causal, softmax_scale))
        return q.clone(), None

    module.flash_attn_func = flash_attn_func
    monkeypatch.setitem(sys.modules, "fa3_fwd_interface", module)
    monkeypatch.setitem(sys.modules, "flash_attn_interface", None)  # import raises ImportError
    return calls


def test_fa3_runs_from_the_fa3_fwd_module_and_is_available(fake_fa3):
    torch = pytest.importorskip("torch")
    assert get_task("attention_fwd").baseline_availability(["fa3"]) == {"fa3": None}
    q = torch.zeros(1, 4, 2, 64, dtype=torch.bfloat16)
    out = _reference("attention_fwd").fa3(q, q, q, True, 0.125)
    assert out["o"].shape == q.shape and fake_fa3 == [(torch.bfloat16, True, 0.125)]


def test_fa3_from_the_fa3_fwd_wheel_is_na_on_fp16_with_the_reason(fake_fa3):
    torch = pytest.importorskip("torch")
    q = torch.zeros(1, 4, 2, 64, dtype=torch.float16)
    with pytest.raises(NotImplementedError, match="no fp16 kernels: bf16 only"):
        _reference("attention_fwd").fa3(q, q, q, False, 0.125)
    assert fake_fa3 == []


def test_the_full_fa3_build_is_preferred_and_runs_fp16(fake_fa3, monkeypatch):
    torch = pytest.importorskip("torch")
    full = types.ModuleType("flash_attn_interface")
    full.flash_attn_func = lambda q, k, v, softmax_scale=None, causal=False: q + 1
    monkeypatch.setitem(sys.modules, "flash_attn_interface", full)
    q = torch.zeros(1, 4, 2, 64, dtype=torch.float16)
    assert _reference("attention_fwd").fa3(q, q, q, False, 0.125)["o"].eq(1).all() and fake_fa3 == []


def test_library_versions_name_fa3_and_quack_by_their_distributions(monkeypatch):
    pytest.importorskip("torch")
    assert module_version("numpy") == f"numpy {__import__('numpy').__version__}"
    assert module_version("no_such_module_kseek") is None
    attention = _reference("attention_fwd")
    monkeypatch.setattr(attention, "module_version", lambda m: "fa3-fwd 0.0.3" if m == "fa3_fwd_interface" else None)
    assert "fa3_fwd_interface: fa3-fwd 0.0.3" in attention.versions()
    import gpu_harness.tasks.data_task as data_task

    monkeypatch.setattr(data_task, "module_version", lambda m: "quack-kernels 0.6.5" if m.startswith("quack") else None)
    assert get_task("softmax_rows").versions().endswith(", quack-kernels 0.6.5")


# ---- through the harness: the verdict, the results table ----


@needs_gxx
def test_an_evaluation_reports_the_speedup_over_the_best_library_per_scenario(tmp_path, monkeypatch):
    def edit(text):
        text = text.replace(
            'numpy = { function = "numpy_matmul" }',
            'numpy = { function = "numpy_matmul", library = true }\n'
            'dot = { function = "numpy_dot", library = true }\n'
            'absent = { function = "numpy_dot", library = true, requires = ["no_such_module_kseek"] }',
        )
        text = text.replace('default = ["numpy", "naive"]', 'default = ["numpy", "dot", "absent", "naive"]')
        return text.replace('baseline = "naive"', 'baseline = "best_library"')

    folder = _task_copy(tmp_path, "libmat", edit)
    with open(folder / "reference.py", "a") as f:
        f.write("\n\ndef numpy_dot(a, b, c, m, n, k):\n    np.dot(a, b, out=c)\n")
    monkeypatch.setenv("KSEEK_TASKS_DIR", str(tmp_path))
    r = evaluate("libmat", REPO / "tasks" / "matmul_cpu" / "naive.cpp", scenarios="m7_n13_k5,m127_n255_k65")
    assert r.status == "correct", render_table(r)
    assert r.libraries == ["numpy", "dot", "absent"]
    assert r.baselines == ["numpy", "dot", "absent", "naive", "best_library"]
    assert r.baseline_notes["absent"].startswith("no_such_module_kseek does not import here")
    verdict = json.loads(json.dumps(r.to_dict()))
    for s in verdict["scenarios"]:
        fastest = min(("numpy", "dot"), key=lambda n: s["baseline_ms"][n])
        assert s["details"]["best_library"] == fastest
        assert s["baseline_ms"]["best_library"] == s["baseline_ms"][fastest]
        assert s["speedup"]["best_library"] == pytest.approx(s["speedup"][fastest])
        assert figures.scenario_interval(s, "best_library") is not None
    assert r.geomean["best_library"]["count"] == 2 and figures.speedup_over(verdict, "best_library") > 0
    table = render_table(r)
    assert "x best_library" in table.splitlines()[0] and "best library" in table.splitlines()[0]
    assert all(s["details"]["best_library"] in table for s in verdict["scenarios"])
    assert "vs best_library:" in table.splitlines()[-1]
