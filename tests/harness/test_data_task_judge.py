"""The generic task's judge (gpu_harness/tasks/data_task.py) in this process, on the cpu target's numpy arrays:
what a folder's spec becomes, reference.py's functions and their failures (each the task's error, never the
candidate's), each tolerance rule and each way an output can be wrong. No child process: the evaluation's
side is tested by test_task_folders.py and test_evaluation_phases.py."""

import ctypes
import math
import sys
import types

import numpy as np
import pytest

from gpu_harness.tasks import TaskError, folder_task
from gpu_harness.taskscaffold import scaffold
from gpu_harness.taskspec import load_spec

PARAMS = {"rows": 7, "cols": 33, "scale": 0.5}
SCALE_ADD = "def numpy_scale_add(x, y, out, scale, rows, cols):\n    out[...] = x * scale + y\n"


@pytest.fixture
def folder(tmp_path):
    return scaffold("demo_op", tmp_path)


def task_of(folder, reference=None, **edits):
    """The folder's task after replacing text in task.toml (old -> new) and, if given, reference.py."""
    path = folder / "task.toml"
    text = path.read_text()
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)
    if reference is not None:
        (folder / "reference.py").write_text(reference)
    return folder_task(load_spec(folder))


def honest(task, params, seed):
    inputs = task.make_inputs(params, seed)
    ref = task.reference_outputs(params, inputs)
    return {name: ref[name].astype(np.float32) for name in ref}


# ---- what the spec becomes ----


def test_the_task_holds_the_specs_facts(folder):
    (folder / "cheats").mkdir()
    task = task_of(
        folder,
        **{
            "numpy = { function": "numpy = { warm = true, function",
            "[goal]": "[call_timeout]\nbase_s = 5.0\nmin_rate = 2e9\n\n[timing]\nbatch_ms = 20.0\n\n[goal]",
            "speedup = 1.0": "speedup = 1.5",
        },
    )
    assert type(task).__name__ == "CpuDataTask"
    assert (task.name, task.target, task.language, task.needs_gpu) == ("demo_op", "cpu", "cpp", False)
    assert task.symbol == "kseek_demo_op" and task.abi.startswith('extern "C" int kseek_demo_op(const float* x')
    assert task.description.startswith("out[r, c] = x[r, c] * scale")
    assert task.tolerance_text == "2 x numpy's own error + 1e-06" and task.flops_text == "2*rows*cols"
    assert task.starting_kernel == folder.resolve() / "kernel.cpp"
    assert task.default_baselines == ("numpy",) and task.output_names == ("out",)
    assert task.baselines_to_warm == ("numpy",)
    assert (task.call_timeout_base_s, task.call_timeout_min_rate) == (5.0, 2e9)
    assert task.timing_overrides == {"batch_ms": 20.0}
    assert task.goal == {"baseline": "numpy", "speedup": 1.5} and task.cheats_dir == folder.resolve() / "cheats"
    assert task._checked is False  # the self check runs once, before the first judgement
    assert task.quick_ids() == ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]
    sc = {s.id: s for s in task.scenarios()}["r7_c33_s0.5"]
    assert sc.params == PARAMS and sc.flops == 2.0 * 7 * 33 and sc.bytes == 3.0 * 4 * 7 * 33
    assert task.scenarios() is not task.scenarios()  # a copy: a caller cannot reorder the task's own
    assert task.output_nbytes(PARAMS) == 4 * 7 * 33
    assert task.reference_note() == "reference.py:reference on float64 copies of the inputs (cpu)"


def test_without_a_bytes_formula_each_tensor_is_read_or_written_once(folder):
    task = task_of(
        folder,
        **{
            'bytes = "3*4*rows*cols"': "",
            'name = "y"\nkind = "input"\ndtype = "float32"': ('name = "y"\nkind = "input"\ndtype = "float64"'),
        },  # fmt: skip
    )
    sc = {s.id: s for s in task.scenarios()}["r7_c33_s0.5"]
    assert sc.bytes == (4 + 8 + 4) * 7 * 33


def test_the_scalars_reach_the_functions_as_ints_and_floats(folder):
    values = task_of(folder).scalar_values({"rows": 7.0, "cols": 33, "scale": 1})
    assert values == {"scale": 1.0, "rows": 7, "cols": 33}
    assert [type(v) for v in values.values()] == [float, int, int]


def test_without_a_starting_kernel_the_stub_is_written_once_to_the_cache(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("KSEEK_CACHE_DIR", str(tmp_path / "cache"))
    task = task_of(folder, **{'starting = "kernel.cpp"': ""})
    stub = task.starting_kernel
    assert stub.parent == tmp_path / "cache" / "stubs" and stub.name.startswith("demo_op-") and stub.suffix == ".cpp"
    assert task.abi[:-1] in stub.read_text() and list(stub.parent.iterdir()) == [stub]
    stub.write_text("kept")
    assert task_of(folder).starting_kernel == stub and stub.read_text() == "kept"  # not rewritten


# ---- baselines ----


def test_baselines_are_described_and_an_unknown_one_is_named(folder):
    (folder / "naive.cpp").write_text("// a kernel baseline\n")
    task = task_of(folder, **{"numpy = { function": 'naive = { kernel = "naive.cpp" }\nnumpy = { function'})
    assert task.baseline_descriptions() == {"naive": "naive (kernel naive.cpp)",
                                            "numpy": "numpy (reference.py:numpy_scale_add)"}  # fmt: skip
    assert task.baseline_availability(["numpy", "cublas"]) == {
        "numpy": None, "cublas": "unknown baseline 'cublas' (known: naive, numpy)"}  # fmt: skip


def test_only_kernel_baselines_are_built_and_one_that_does_not_build_stops(folder, monkeypatch):
    from gpu_harness import build as build_module

    (folder / "naive.cpp").write_text("// a kernel baseline\n")
    task = task_of(folder, **{"numpy = { function": 'naive = { kernel = "naive.cpp" }\nnumpy = { function'})
    built = []

    def fake_build(path, language):
        built.append((path, language))
        return types.SimpleNamespace(ok=True, lib_path="/libs/naive.so", reason=None)

    monkeypatch.setattr(build_module, "build", fake_build)
    assert task.baseline_libs(["numpy", "naive", "unknown"]) == {"naive": "/libs/naive.so"}
    assert built == [(folder.resolve() / "naive.cpp", "cpp")]
    monkeypatch.setattr(build_module, "build", lambda p, lang: types.SimpleNamespace(ok=False, reason="syntax"))
    with pytest.raises(RuntimeError, match="^the naive baseline does not build: syntax$"):
        task.baseline_libs(["naive"])


def test_baseline_callables_call_each_kind_with_every_argument(folder):
    (folder / "naive.cpp").write_text("// a kernel baseline\n")
    task = task_of(folder, **{"numpy = { function": 'naive = { kernel = "naive.cpp" }\nnumpy = { function'})
    inputs = task.make_inputs(PARAMS, 3)
    calls = []

    def kernel(*args):
        calls.append(args)
        return len(calls) - 1  # 0 the first time, then "not supported"

    got = task.baseline_callables(["numpy", "naive", "torch"], PARAMS, inputs, {"naive": kernel})
    assert got["torch"] == "unknown baseline 'torch'"
    missing = task.baseline_callables(["naive", "numpy"], PARAMS, inputs, {})
    assert missing["naive"] == "naive baseline library not loaded" and callable(missing["numpy"])
    got["numpy"]()
    got["naive"]()
    (args,) = calls
    assert args[0] == inputs["x"].ctypes.data and args[1] == inputs["y"].ctypes.data
    assert isinstance(args[2], int) and args[2] not in (args[0], args[1])
    assert args[3:] == (0.5, 7, 33)
    with pytest.raises(RuntimeError, match=r"^the naive baseline returned 1 \(configuration not supported\)$"):
        got["naive"]()


def test_a_function_baseline_writes_the_outputs_it_is_given(folder):
    task = task_of(folder, reference="CALLS = []\n\n\ndef reference(x, y, scale, rows, cols):\n    return x\n\n\n"
                   "def numpy_scale_add(x, y, out, scale, rows, cols):\n    CALLS.append((out.shape, scale, rows))\n"
                   "    out[...] = x * scale + y\n")  # fmt: skip
    inputs = task.make_inputs(PARAMS, 3)
    got = task.baseline_callables(["numpy"], PARAMS, inputs, {})
    got["numpy"]()  # writes into outputs of its own: the call is what is timed
    assert task.module().CALLS == [((7, 33), 0.5, 7)]
    outs = task.new_outputs(PARAMS)
    task.run_function_baseline("numpy", PARAMS, inputs, outs)
    np.testing.assert_allclose(outs["out"], inputs["x"] * np.float32(0.5) + inputs["y"], rtol=1e-6)


def test_a_baseline_that_raises_is_the_tasks_error_naming_its_line(folder):
    task = task_of(folder, reference="def reference(x, y, scale, rows, cols):\n    return x\n\n\n"
                   "def numpy_scale_add(x, y, out, scale, rows, cols):\n    raise RuntimeError('no')\n")  # fmt: skip
    inputs = task.make_inputs(PARAMS, 3)
    with pytest.raises(TaskError, match=r"^baseline numpy raised on rows=7, cols=33, scale=0.5: RuntimeError: no "
                       r"\(reference.py, line 6\)$"):  # fmt: skip
        task.run_function_baseline("numpy", PARAMS, inputs, task.new_outputs(PARAMS))


# ---- reference.py ----


def test_reference_py_is_imported_once_under_the_tasks_own_name(folder):
    task = task_of(folder)
    first = task.module()
    assert task.module() is first and sys.modules["kseek_task_demo_op_reference"] is first
    assert task.function("reference") is first.reference


def test_a_reference_py_that_does_not_import_is_the_tasks_error_naming_its_line(folder):
    task = task_of(folder, reference="import numpy as np\n\n\ndef reference(x:\n    return x\n")
    with pytest.raises(TaskError, match=r"reference.py does not import: SyntaxError: .*\(reference.py, line 4\)$"):
        task.module()
    assert "kseek_task_demo_op_reference" not in sys.modules
    task = task_of(folder, reference="x = 1\nraise ImportError('missing thing')\n")
    with pytest.raises(TaskError, match=r"does not import: ImportError: missing thing \(reference.py, line 2\)$"):
        task.module()


def test_a_missing_or_uncallable_function_is_the_tasks_error(folder):
    task = task_of(folder, reference="reference = 3\n")
    for name in ("reference", "absent"):
        with pytest.raises(TaskError, match=rf"reference.py has no function '{name}'$"):
            task.function(name)


def test_the_reference_gets_float64_copies_and_its_output_is_widened(folder):
    task = task_of(folder, reference="import numpy as np\n\n\ndef reference(x, y, scale, rows, cols):\n"
                   "    assert x.dtype == np.float64 and y.dtype == np.float64, (x.dtype, y.dtype)\n"
                   "    assert type(scale) is float and type(rows) is int\n"
                   "    x[...] = 0\n"  # a copy: the kernel's inputs are not touched
                   "    return (y * scale).astype(np.float32)\n")  # fmt: skip
    inputs = task.make_inputs(PARAMS, 4)
    before = inputs["x"].copy()
    ref = task.reference_outputs(PARAMS, inputs)
    assert ref["out"].dtype == np.float64 and ref["out"].shape == (7, 33)
    np.testing.assert_array_equal(inputs["x"], before)


@pytest.mark.parametrize(
    "returns, says",
    [
        ("{'other': x}", "^the reference returned no out on rows=7, cols=33, scale=0.5$"),
        ("(x, y)", r"^the reference must return 1 output\(s\) \(out\)$"),
        ("x[:, :3]", r"^the reference's out has shape \(7, 3\), the ABI says \(7, 33\) on rows=7, cols=33, scale=0.5$"),
        ("x > 0", "^the reference's out has dtype bool, expected float values for float32$"),
        ("(x * 10).astype(np.int32)", "^the reference's out has dtype int32, expected float values for float32$"),
        ("x.astype(np.complex128)", "^the reference's out has dtype complex128, expected float values for float32$"),
    ],
)
def test_a_reference_that_returns_the_wrong_thing_is_the_tasks_error(folder, returns, says):
    task = task_of(folder, reference=f"import numpy as np\n\n\ndef reference(x, y, scale, rows, cols):\n"
                   f"    return {returns}\n")  # fmt: skip
    with pytest.raises(TaskError, match=says):
        task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 4))


@pytest.mark.parametrize("returns", ["{'out': x}", "[x]", "(x,)", "x"])
def test_a_reference_may_return_a_dict_a_list_a_tuple_or_the_array(folder, returns):
    task = task_of(folder, reference=f"def reference(x, y, scale, rows, cols):\n    return {returns}\n")
    inputs = task.make_inputs(PARAMS, 4)
    np.testing.assert_array_equal(task.reference_outputs(PARAMS, inputs)["out"], inputs["x"])


def test_an_integer_output_needs_integer_reference_values(folder):
    edits = {'name = "out"\nkind = "output"\ndtype = "float32"': 'name = "out"\nkind = "output"\ndtype = "int32"',
             '[tolerance]\nbaseline = "numpy"\nfactor = 2.0\nfloor = 1e-6': "[tolerance]\nrel_l2 = 0.0"}  # fmt: skip
    task = task_of(folder, reference="import numpy as np\n\n\ndef reference(x, y, scale, rows, cols):\n"
                   "    return (x > 0).astype(np.int64)\n\n\n" + SCALE_ADD, **edits)  # fmt: skip
    ref = task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 4))
    assert ref["out"].dtype == np.int64  # integers are compared as they are
    (folder / "reference.py").write_text("def reference(x, y, scale, rows, cols):\n    return x\n")
    task = folder_task(load_spec(folder))
    with pytest.raises(TaskError, match="has dtype float64, expected int values for int32"):
        task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 4))


def test_the_self_check_runs_the_reference_and_each_function_baseline_on_the_smallest_scenario(folder):
    task = task_of(folder)
    assert task.self_check() == {"scenario": "r1_c1_s2.0", "device": "cpu"} and task._checked
    task = task_of(folder, reference="def reference(x, y, scale, rows, cols):\n    return x\n\n\n"
                   "def numpy_scale_add(x, y, out, scale, rows, cols):\n    pass\n")  # fmt: skip
    with pytest.raises(TaskError, match=r"^baseline numpy left out unwritten \(NaN\) on r1_c1_s2.0$"):
        task.self_check()
    assert not task._checked


def test_the_self_check_skips_kernel_baselines(folder):
    (folder / "naive.cpp").write_text("// never built by the self check\n")
    task = task_of(folder, **{"numpy = { function": 'naive = { kernel = "naive.cpp" }\nnumpy = { function'})
    assert task.self_check()["scenario"] == "r1_c1_s2.0"
    # and goes on to the function baselines after a kernel one
    (folder / "reference.py").write_text("def reference(x, y, scale, rows, cols):\n    return x\n\n\n"
                                         "def numpy_scale_add(x, y, out, scale, rows, cols):\n    pass\n")  # fmt: skip
    with pytest.raises(TaskError, match="baseline numpy left out unwritten"):
        folder_task(load_spec(folder)).self_check()


def test_a_reference_that_raises_names_the_line_in_reference_py_not_the_harness(folder):
    task = task_of(folder, reference="import numpy as np\n\n\ndef helper(x):\n    return np.linalg.cholesky(x)\n\n\n"
                   "def reference(x, y, scale, rows, cols):\n    return helper(x)\n")  # fmt: skip
    with pytest.raises(TaskError, match=r"^the reference raised on rows=7, cols=33, scale=0.5: LinAlgError: .* "
                       r"\(reference.py, line 5\)$"):  # fmt: skip
        task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 4))


def test_a_sys_exit_in_reference_py_is_the_tasks_error_not_the_judges_end(folder):
    # SystemExit is no Exception: let through, it ended `eval` and `task check` with the task's own exit code and
    # no verdict, where the contract is a task error (docs/tasks.md, "reference.py")
    task = task_of(folder, reference="import sys\n\nsys.exit(3)\n")
    with pytest.raises(TaskError, match=r"does not import: SystemExit: 3 \(reference.py, line 3\)$"):
        task.module()
    task = task_of(folder, reference="import sys\n\n\ndef reference(x, y, scale, rows, cols):\n    sys.exit(4)\n\n\n"
                   "def numpy_scale_add(x, y, out, scale, rows, cols):\n    sys.exit(5)\n")  # fmt: skip
    inputs = task.make_inputs(PARAMS, 3)
    with pytest.raises(TaskError, match=r"^the reference raised on rows=7, cols=33, scale=0.5: SystemExit: 4 "):
        task.reference_outputs(PARAMS, inputs)
    with pytest.raises(TaskError, match=r"^baseline numpy raised on rows=7, cols=33, scale=0.5: SystemExit: 5 "):
        task.run_function_baseline("numpy", PARAMS, inputs, task.new_outputs(PARAMS))


# ---- the kernel's call ----


def test_binding_declares_pointers_and_scalars_in_the_abis_order(folder):
    task = task_of(folder)
    fn = types.SimpleNamespace()
    bound = task.bind(types.SimpleNamespace(kseek_demo_op=fn))
    assert bound is fn and fn.restype is ctypes.c_int
    assert fn.argtypes == [ctypes.c_void_p] * 3 + [ctypes.c_float, ctypes.c_int, ctypes.c_int]


# ---- judging ----


def test_the_baseline_rule_is_factor_times_the_baselines_error_plus_the_floor(folder):
    task = task_of(folder, reference="import numpy as np\n\n\ndef reference(x, y, scale, rows, cols):\n"
                   "    return x * scale + y\n\n\n"
                   "def numpy_scale_add(x, y, out, scale, rows, cols):\n    out[...] = (x * scale + y) * 1.001\n",
                   **{"factor = 2.0": "factor = 3.0", "floor = 1e-6": "floor = 1e-4"})  # fmt: skip
    j = task.judge(PARAMS, 5, honest(task, PARAMS, 5))
    assert j.correct and j.details["numpy_error"] == pytest.approx(1e-3, rel=1e-3)
    assert j.tolerance == pytest.approx(3.0 * j.details["numpy_error"] + 1e-4)
    assert j.error < 1e-6


def test_a_baseline_whose_error_cannot_be_measured_gives_the_default_bound(folder):
    # an all-zero reference: any baseline error is infinite relative to it
    task = task_of(folder, reference="def reference(x, y, scale, rows, cols):\n    return x * 0\n\n\n"
                   "def numpy_scale_add(x, y, out, scale, rows, cols):\n    out[...] = 1.0\n",
                   **{"floor = 1e-6": "floor = 1e-6\ndefault_error = 1e-3"})  # fmt: skip
    j = task.judge(PARAMS, 5, {"out": np.zeros((7, 33), np.float32)})
    assert j.details["numpy_error"] == math.inf and j.tolerance == pytest.approx(2.0 * 1e-3 + 1e-6)
    assert j.correct and j.error == 0.0


def test_a_fixed_bound_applies_and_a_given_tolerance_wins(folder):
    task = task_of(folder, **{'baseline = "numpy"\nfactor = 2.0\nfloor = 1e-6': "rel_l2 = 1e-3"})
    outs = honest(task, PARAMS, 5)
    j = task.judge(PARAMS, 5, outs)
    assert j.correct and j.tolerance == 1e-3 and j.details == {}
    outs["out"] *= np.float32(1.002)
    j = task.judge(PARAMS, 5, outs)
    assert not j.correct and j.error == pytest.approx(2e-3, rel=1e-2) and "above tolerance" in j.reason
    assert task.judge(PARAMS, 5, outs, tolerance=3e-3).correct


def test_the_allclose_rule_bounds_each_element(folder):
    task = task_of(folder, **{'baseline = "numpy"\nfactor = 2.0\nfloor = 1e-6': "atol = 1e-3\nrtol = 1e-2"})
    outs = honest(task, PARAMS, 1)
    j = task.judge(PARAMS, 1, outs)
    assert j.correct and j.tolerance == 1.0 and j.reason is None and j.error < 1e-3 and j.details == {}
    ref = task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 1))["out"]
    outs["out"][2, 3] = ref[2, 3] + 2 * (1e-3 + 1e-2 * abs(ref[2, 3]))  # twice the element's bound
    j = task.judge(PARAMS, 1, outs)
    assert not j.correct and j.error == pytest.approx(2.0, rel=1e-3)
    assert j.reason == "some elements differ by more than 0.001 + 0.01 x |ref| (worst x2)"
    assert task.judge(PARAMS, 1, outs, tolerance=2.5).correct  # a bound given is the ratio allowed
    outs["out"][0, 0] = np.nan  # unwritten: named as such, not as a distance
    j = task.judge(PARAMS, 1, outs)
    assert not j.correct and "NaN/Inf where the reference is finite" in j.reason


def test_a_missing_or_mistyped_output_is_named_with_what_the_abi_expects(folder):
    task = task_of(folder)
    j = task.judge(PARAMS, 5, {})
    assert (j.correct, j.error) == (False, None)
    assert j.reason == "out: output has missing, expected shape (7, 33) float32"
    assert j.tolerance == pytest.approx(
        2.0
        * task.judging.baseline_error(
            "numpy", PARAMS, task.make_inputs(PARAMS, 5), task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 5))
        )
        + 1e-6
    )
    j = task.judge(PARAMS, 5, {"out": honest(task, PARAMS, 5)["out"].astype(np.float64)})
    assert j.reason == "out: output has shape (7, 33) float64, expected shape (7, 33) float32"
    j = task.judge(PARAMS, 5, {"out": np.zeros((7, 32), np.float32)})
    assert j.reason == "out: output has shape (7, 32) float32, expected shape (7, 33) float32"


def test_the_judgement_carries_the_worst_error_of_the_outputs(folder):
    edits = {'[[args]]\nname = "scale"': '[[args]]\nname = "out2"\nkind = "output"\ndtype = "float32"\n'
             'shape = ["rows", "cols"]\n\n[[args]]\nname = "scale"',
             '[tolerance]\nbaseline = "numpy"\nfactor = 2.0\nfloor = 1e-6': "[tolerance]\nrel_l2 = 0.5"}  # fmt: skip
    task = task_of(folder, reference="def reference(x, y, scale, rows, cols):\n    return x, y\n", **edits)
    inputs = task.make_inputs(PARAMS, 2)
    j = task.judge(PARAMS, 2, {"out": inputs["x"] * np.float32(1.1), "out2": inputs["y"] * np.float32(1.2)})
    assert j.correct and j.error == pytest.approx(0.2, rel=1e-3)
    j = task.judge(PARAMS, 2, {"out": inputs["x"] * np.float32(1.3), "out2": inputs["y"]})
    assert j.error == pytest.approx(0.3, rel=1e-3)


def test_an_error_exactly_at_the_allclose_bound_passes(folder):
    task = task_of(folder, **{'baseline = "numpy"\nfactor = 2.0\nfloor = 1e-6': "atol = 1e-3\nrtol = 1e-2"})
    outs = honest(task, PARAMS, 1)
    outs["out"][1, 1] += np.float32(0.5)
    error = task.judge(PARAMS, 1, outs).error
    assert task.judge(PARAMS, 1, outs, tolerance=error).correct
    assert not task.judge(PARAMS, 1, outs, tolerance=math.nextafter(error, 0.0)).correct


def test_the_stub_is_named_after_the_task_and_its_sources_digest(folder, tmp_path, monkeypatch):
    import re

    monkeypatch.setenv("KSEEK_CACHE_DIR", str(tmp_path / "cache"))
    stub = task_of(folder, **{'starting = "kernel.cpp"': ""}).starting_kernel
    assert re.fullmatch(r"demo_op-[0-9a-f]{12}\.cpp", stub.name), stub.name
    assert not list(stub.parent.glob("*.tmp"))
    # another task's stub goes into the same (existing) folder
    other = task_of(folder, **{'symbol = "kseek_demo_op"': 'symbol = "kseek_other"'}).starting_kernel
    assert other.parent == stub.parent and other != stub and other.is_file()


def test_a_cuda_folder_is_judged_on_the_gpu_unless_told_otherwise(tmp_path):
    pytest.importorskip("torch")
    spec = load_spec(scaffold("demo_gpu", tmp_path, target="cuda-sm90"))
    assert folder_task(spec)._device_name == "cuda" and folder_task(spec, device="cpu")._device_name == "cpu"
    assert type(folder_task(spec)).__name__ == "CudaDataTask"


def test_the_self_check_is_reproducible(folder):
    task = task_of(folder, reference="SEEN = []\n\n\ndef reference(x, y, scale, rows, cols):\n"
                   "    SEEN.append(float(x.sum()))\n    return x\n\n\n" + SCALE_ADD)  # fmt: skip
    task.self_check()
    task.self_check()
    seen = task.module().SEEN
    assert len(seen) == 2 and seen[0] == seen[1]  # the same inputs each time: `task check` says the same


TWO_OUTPUTS = {'[[args]]\nname = "scale"': '[[args]]\nname = "out2"\nkind = "output"\ndtype = "float32"\n'
               'shape = ["rows", "cols"]\n\n[[args]]\nname = "scale"'}  # fmt: skip


@pytest.mark.parametrize(
    "returns, says",
    [("{}", "^the reference returned no out, out2 on rows=7, cols=33, scale=0.5$"),
     ("x", r"^the reference must return 2 output\(s\) \(out, out2\)$")],
)  # fmt: skip
def test_a_reference_short_of_outputs_names_each_one(folder, returns, says):
    task = task_of(folder, reference=f"def reference(x, y, scale, rows, cols):\n    return {returns}\n", **TWO_OUTPUTS)
    with pytest.raises(TaskError, match=says):
        task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 4))


def test_a_baseline_that_leaves_two_outputs_unwritten_names_both(folder):
    task = task_of(folder, reference="def reference(x, y, scale, rows, cols):\n    return x, y\n\n\n"
                   "def numpy_scale_add(x, y, out, out2, scale, rows, cols):\n    pass\n", **TWO_OUTPUTS)  # fmt: skip
    with pytest.raises(TaskError, match=r"^baseline numpy left out, out2 unwritten \(NaN\) on r1_c1_s2.0$"):
        task.self_check()


def test_a_reference_called_with_the_wrong_arguments_names_no_line(folder):
    task = task_of(folder, reference="def reference(a):\n    return a\n")
    with pytest.raises(TaskError, match=r"reference\(\) got an unexpected keyword argument 'x'$"):
        task.reference_outputs(PARAMS, task.make_inputs(PARAMS, 4))
