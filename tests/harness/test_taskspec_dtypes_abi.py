"""Spec features any task may use and attention_fwd needs to become a folder (issue #16, step 2): a tensor's dtype
and a scalar's value chosen by a scenario symbol (`{by = "dtype", bf16 = ..., fp16 = ...}`), the CUDA stream as
an argument (`kind = "stream"`), a hand-written declaration shown to agents (`[kernel] abi_text`), and inputs
drawn in the tensor's own dtype (`init = {dist = "normal", native = true}`), which is attention's input recipe.
The judge's side runs on the CPU (data_cuda with device="cpu"): no GPU is needed here."""

import ctypes

import pytest

from gpu_harness.tasks import folder_task
from gpu_harness.tasks.summary import task_summary
from gpu_harness.taskscaffold import scaffold, stub_kernel
from gpu_harness.taskspec import load_spec

from .test_taskspec_edges import edited, expect, problems_of

# the scaffold's example with a `prec` axis that chooses the tensors' dtype
PREC_EDITS = (
    ('id = "r{rows}_c{cols}_s{scale}"', 'id = "r{rows}_c{cols}_s{scale}_{prec}"'),
    ("list = [{ rows = 1, cols = 1, scale = 2.0 }]", 'list = [{ rows = 1, cols = 1, scale = 2.0, prec = "half" }]'),
    ('quick = ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]', 'quick = ["r1_c1_s2.0_half", "r7_c33_s0.5_full"]'),
    ("scale = [0.5]", 'scale = [0.5]\nprec = ["half", "full"]'),
    ('bytes = "3*4*rows*cols"\n', ""),  # the default: every tensor once, at its own dtype's size
)
BY_PREC = 'dtype = { by = "prec", half = "float16", full = "float32" }'
HALF = {"rows": 7, "cols": 33, "scale": 0.5, "prec": "half"}
FULL = {**HALF, "prec": "full"}


def with_prec(folder, *more):
    text = edited(folder, *PREC_EDITS, *more)
    for name in ("x", "y", "out"):  # each tensor's dtype by prec
        text = text.replace(f'name = "{name}"\nkind = ', f'name = "{name}"\n{BY_PREC}\nkind = ', 1)
    text = text.replace('dtype = "float32"\nshape = ["rows", "cols"]', 'shape = ["rows", "cols"]')
    (folder / "task.toml").write_text(text)
    return folder


@pytest.fixture
def gpu_folder(tmp_path):
    return scaffold("demo_gpu", tmp_path, target="cuda-sm90")


@pytest.fixture
def cpu_folder(tmp_path):
    return scaffold("demo_op", tmp_path)


# ---- dtypes chosen by a scenario symbol ----


def test_a_scenarios_dtype_symbol_chooses_the_tensors_dtypes_everywhere(gpu_folder):
    torch = pytest.importorskip("torch")
    task = folder_task(load_spec(with_prec(gpu_folder)), device="cpu")
    half, full = task.make_inputs(HALF, 3), task.make_inputs(FULL, 3)
    assert half["x"].dtype == half["y"].dtype == torch.float16 and full["x"].dtype == torch.float32
    assert task.new_outputs(HALF)["out"].dtype == torch.float16
    by_id = {s.id: s for s in task.scenarios()}
    assert by_id["r7_c33_s0.5_half"].bytes == 3 * 2 * 7 * 33 and by_id["r7_c33_s0.5_full"].bytes == 3 * 4 * 7 * 33
    assert task.output_nbytes(HALF) == 2 * 7 * 33
    ref = task.reference_outputs(HALF, half)
    assert task.judge(HALF, 3, {"out": ref["out"].half()}).correct
    wrong = task.judge(HALF, 3, {"out": ref["out"].float()})
    assert not wrong.correct and wrong.reason == "out: output has shape (7, 33) float32, expected shape (7, 33) float16"


def test_the_generated_declaration_says_each_choice_of_a_chosen_dtype(gpu_folder):
    spec = load_spec(with_prec(gpu_folder))
    assert "const void* x /* prec half: __half, full: float */" in spec.abi()
    assert "void* out /* prec half: __half, full: float */" in spec.abi()
    assert spec.declaration()[:-1] + " {" in stub_kernel(spec)  # the stub defines what is declared
    assert task_summary(folder_task(spec, device="cpu"))["abi"] == spec.abi()


def test_choices_of_one_c_type_keep_it(gpu_folder):
    text = (
        with_prec(gpu_folder)
        .joinpath("task.toml")
        .read_text()
        .replace(BY_PREC, 'dtype = { by = "prec", half = "float32", full = "float32" }')
    )
    gpu_folder.joinpath("task.toml").write_text(text)
    assert "const float* x /* prec half: float, full: float */" in load_spec(gpu_folder).abi()


def test_a_chosen_dtype_works_on_the_cpu_target(cpu_folder):
    folder = with_prec(cpu_folder)
    text = (
        folder.joinpath("task.toml")
        .read_text()
        .replace(BY_PREC, 'dtype = { by = "prec", half = "float32", full = "float64" }')
    )
    folder.joinpath("task.toml").write_text(text)
    task = folder_task(load_spec(folder))
    assert (
        task.make_inputs(HALF, 1)["x"].dtype.name == "float32"
        and task.make_inputs(FULL, 1)["y"].dtype.name == "float64"
    )
    assert task.new_outputs(FULL)["out"].dtype.name == "float64"


def test_a_scalars_value_chosen_by_a_scenario_symbol(gpu_folder):
    folder = with_prec(gpu_folder, ('value = "scale"', 'value = { by = "prec", half = "scale", full = "2*scale" }'))
    task = folder_task(load_spec(folder), device="cpu")
    assert task.scalar_values(HALF)["scale"] == 0.5 and task.scalar_values(FULL)["scale"] == 1.0
    assert "float scale," in task.abi  # a scalar's C type is its own, whatever the value


def test_a_mapping_naming_an_unknown_dtype_is_a_problem_of_its_line(gpu_folder):
    with_prec(gpu_folder)
    bad = 'dtype = { by = "prec", half = "float17", full = "float32" }'
    expect(
        gpu_folder,
        (BY_PREC, bad),
        want=[(bad, "args.x.dtype", "half: unknown dtype 'float17' (known: float32, float64, float16, bfloat16, int8, "
               "uint8, int32, int64)")],
    )  # fmt: skip


def test_a_scenario_value_the_mapping_does_not_cover_is_a_problem(gpu_folder):
    with_prec(gpu_folder)
    partial = 'dtype = { by = "prec", half = "float16" }'
    expect(
        gpu_folder,
        (BY_PREC, partial),
        want=[
            (partial, "args.x.dtype", "prec = full (scenario r7_c33_s0.5_full) has no choice (the mapping gives half)")
        ],
    )


def test_a_chosen_value_that_is_no_number_on_a_scenario_is_a_problem(gpu_folder):
    with_prec(gpu_folder)
    bad = 'value = { by = "prec", half = "scale", full = "scale/(rows - 7)" }'
    expect(
        gpu_folder,
        ('value = "scale"', bad),
        want=[(bad, "args.scale.value", "'{by = prec, half = scale, full = scale/(rows - 7)}' on scenario r7_c33_s0.5_full: "
               "'ZeroDivisionError: float division by zero' is not a number")],
    )  # fmt: skip


def test_by_naming_no_scenario_symbol_is_a_problem(gpu_folder):
    with_prec(gpu_folder)
    wrong = 'value = { by = "precision", half = 0, full = 1 }'
    expect(
        gpu_folder,
        ('value = "scale"', wrong),
        want=[(wrong, "args.scale.value", "by = 'precision' is no scenario symbol (known: rows, cols, scale, prec)")],
    )


def test_bad_mappings_each_say_what_is_wrong(cpu_folder):
    got = problems_of(
        cpu_folder,
        ('dtype = "float32"\nshape = ["rows", "cols"]\ninit = { dist = "normal"',
         'dtype = { half = "float32" }\nshape = ["rows", "cols"]\ninit = { dist = "normal"'),
        ('dtype = "float32"\nshape = ["rows", "cols"]\ninit = { dist = "uniform"',
         'dtype = { by = "rows", 1 = "float16", 7 = "float32" }\nshape = ["rows", "cols"]\ninit = { dist = "uniform"'),
        ('name = "out"\nkind = "output"\ndtype = "float32"', 'name = "out"\nkind = "output"\ndtype = { by = "rows", 1 = "float32", 7 = "int32" }'),
        ('name = "rows"\nkind = "scalar"\ndtype = "int32"', 'name = "rows"\nkind = "scalar"\ndtype = { by = "cols", 1 = "int32" }'),
        ('value = "scale"', 'value = { by = "rows", 1 = "scale(" }'),
    )  # fmt: skip
    fields = {(f, m) for _, f, m in got}
    assert ("args.x.dtype", 'by = None: name the scenario symbol that chooses, e.g. {by = "dtype", ...}') in fields
    assert ("args.y.dtype", "1: float16 is not available on target cpu") in fields
    assert ("args.out.dtype", "the choices mix float and integer dtypes (one init makes both)") in fields
    assert ("args.rows.dtype", "unknown scalar dtype {'by': 'cols', '1': 'int32'} (known: int32, int64, float32, "
            "float64) (a scalar's C type is fixed: map its value instead)") in fields  # fmt: skip
    assert any(f == "args.scale.value" and m.startswith("1: 'scale(' does not parse") for f, m in fields)
    assert all(line is not None for line, _, _ in got[:5])


# ---- the ABI: a stream, a declaration written by hand ----


def test_a_stream_argument_is_declared_cudastream_and_passed_as_the_legacy_default_stream(gpu_folder):
    pytest.importorskip("torch")
    edited(
        gpu_folder, ('[[args]]\nname = "rows"', '[[args]]\nname = "stream"\nkind = "stream"\n\n[[args]]\nname = "rows"')
    )
    task = folder_task(load_spec(gpu_folder), device="cpu")
    assert "float scale, cudaStream_t stream, int rows, int cols);" in task.abi
    assert "(void)stream;" in stub_kernel(task.spec)

    class Lib:
        kseek_demo_gpu = ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 0)  # bind sets argtypes on what it finds

    fn = task.bind(Lib)
    assert fn.argtypes[3:5] == [ctypes.c_float, ctypes.c_void_p]
    seen = []
    inputs, outputs = task.make_inputs(HALF, 1), task.new_outputs(HALF)
    task.invoke(lambda *a: seen.append(a) or 0, inputs, outputs, HALF)
    assert seen[0][4] is None and seen[0][3:4] == (0.5,) and seen[0][5:] == (7, 33)


def test_a_stream_is_refused_where_there_is_none_or_with_fields(cpu_folder, gpu_folder):
    stream = '[[args]]\nname = "s"\nkind = "stream"\n\n[[args]]\nname = "rows"'
    expect(cpu_folder, ('[[args]]\nname = "rows"', stream),
           want=[('[[args]]\nname = "s"', "args.s.kind", "a stream is a CUDA argument: target cpu has none")])  # fmt: skip
    got = problems_of(
        gpu_folder,
        ('[[args]]\nname = "rows"', '[[args]]\nname = "t"\nkind = "stream"\n\n'
         + stream.replace('kind = "stream"', 'kind = "stream"\ndtype = "int64"')),
    )  # fmt: skip
    assert [(f, m) for _, f, m in got] == [
        ("args.s.dtype", "a stream has no dtype"),
        ("args.s.kind", "a second stream: a kernel runs on one"),
    ]


ABI_TEXT = '''abi_text = """extern "C" int kseek_demo_gpu(
    const float* x, const float* y,  // [rows, cols], row-major
    float* out,                      // [rows, cols]
    float scale, int rows, int cols);"""'''


def test_abi_text_is_the_declaration_agents_are_shown(gpu_folder):
    edited(gpu_folder, ('starting = "kernel.cu"', ABI_TEXT + '\nstarting = "kernel.cu"'))
    task = folder_task(load_spec(gpu_folder), device="cpu")
    assert task.abi.startswith('extern "C" int kseek_demo_gpu(\n    const float* x, const float* y,  // [rows')
    assert task_summary(task)["abi"] == task.abi
    assert task.spec.declaration() == (
        'extern "C" int kseek_demo_gpu(const float* x, const float* y, float* out, float scale, int rows, int cols);'
    )


def test_abi_text_that_misses_an_argument_or_the_symbol_is_a_problem(gpu_folder):
    bad = ABI_TEXT.replace("cols", "n").replace("kseek_demo_gpu", "kseek_other")
    expect(
        gpu_folder,
        ('starting = "kernel.cu"', bad + '\nstarting = "kernel.cu"'),
        want=[
            ('abi_text = """', "kernel.abi_text", 'declares no extern "C" kseek_demo_gpu (the symbol [kernel] names)'),
            ('abi_text = """', "kernel.abi_text", "does not name argument(s) cols of [[args]]"),
        ],
    )


# ---- inputs drawn in the tensor's own dtype ----


def test_native_draws_are_torchs_own_in_the_tensors_dtype_and_differ_from_float32_rounded(gpu_folder):
    torch = pytest.importorskip("torch")
    with_prec(gpu_folder)
    edited(
        gpu_folder, ('init = { dist = "normal", mean = 0.0, std = 1.0 }', 'init = { dist = "normal", native = true }')
    )
    native = folder_task(load_spec(gpu_folder), device="cpu").make_inputs(HALF, 5)["x"]
    g = torch.Generator().manual_seed(5)
    assert torch.equal(
        native.view(torch.int16), torch.randn((7, 33), generator=g, dtype=torch.float16).view(torch.int16)
    )
    edited(gpu_folder, ("native = true", "native = false"))
    rounded = folder_task(load_spec(gpu_folder), device="cpu").make_inputs(HALF, 5)["x"]
    g = torch.Generator().manual_seed(5)
    assert torch.equal(rounded, torch.randn((7, 33), generator=g, dtype=torch.float32).half())
    assert not torch.equal(native, rounded)  # 231 elements: torch's vector path draws half types otherwise


def test_native_must_be_a_boolean_and_is_no_field_of_integers(cpu_folder):
    got = problems_of(
        cpu_folder, ('init = { dist = "normal", mean = 0.0, std = 1.0 }', 'init = { dist = "normal", native = 1 }')
    )
    assert [(f, m) for _, f, m in got] == [("args.x.init.native", "true or false, got 1")]


def test_native_uniform_on_the_cpu_is_drawn_in_the_arrays_dtype(cpu_folder):
    import numpy as np

    edited(cpu_folder, ("low = -1.0, high = 1.0 }", "low = -1.0, high = 1.0, native = true }"))
    y = folder_task(load_spec(cpu_folder)).make_inputs({"rows": 3, "cols": 5, "scale": 0.5}, 9)["y"]
    rng = np.random.default_rng(9)
    rng.standard_normal((3, 5), dtype=np.float32)  # x is drawn first
    want = rng.random((3, 5), dtype=np.float32) * np.float32(2.0) + np.float32(-1.0)
    assert y.dtype == np.float32 and np.array_equal(y, want)
