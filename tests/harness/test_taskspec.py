"""The task folder format (gpu_harness/taskspec.py): what a good spec gives, and a table of bad specs, each
refused with the field and the line it names (no compiler, no child process)."""

import re

import pytest

from gpu_harness.tasks import get_task, load_folder_task
from gpu_harness.tasks.base import REPO_ROOT
from gpu_harness.taskscaffold import scaffold
from gpu_harness.taskspec import FormulaError, TaskSpecError, load_spec, parse_formula


@pytest.fixture
def folder(tmp_path):
    return scaffold("demo_op", tmp_path)


def test_the_scaffold_is_a_valid_spec(folder):
    spec = load_spec(folder)
    assert spec.abi() == (
        'extern "C" int kseek_demo_op(const float* x, const float* y, float* out, float scale, int rows, int cols);'
    )
    assert len(spec.scenarios) == 1 + 3 * 3 and len(spec.quick_ids) == 3
    assert [sc.id for sc in spec.scenarios][:2] == ["r1_c1_s2.0", "r7_c33_s0.5"]
    assert spec.flops({"rows": 7, "cols": 33}) == 2 * 7 * 33


def test_matmul_cpu_is_a_folder_task_with_its_old_abi_ids_and_limits():
    t = get_task("matmul_cpu")
    assert t.spec.folder == REPO_ROOT / "tasks" / "matmul_cpu"
    assert t.abi == 'extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k);'
    ids = [s.id for s in t.scenarios()]
    assert len(ids) == 15 and ids[0] == "m1_n1_k1" and ids[-1] == "m96_n1024_k384"
    assert t.quick_ids() == ["m1_n257_k129", "m7_n13_k5", "m127_n255_k65", "m256_n256_k256", "m1000_n8_k1000",
                             "m512_n512_k512"]  # fmt: skip
    sc = {s.id: s for s in t.scenarios()}["m127_n255_k65"]
    assert sc.flops == 2.0 * 127 * 255 * 65 and sc.bytes == 4.0 * (127 * 65 + 65 * 255 + 127 * 255)
    assert t.default_baselines == ("numpy", "naive") and t.starting_kernel.name == "naive.cpp"
    assert t.child_env()["OPENBLAS_NUM_THREADS"] == "1"
    limits = t.timing_limits()
    assert (limits.host_ratio, limits.host_overhead_ms, limits.batch_latency_ms) == (1.5, 0.2, 30.0)
    assert t.timing_overrides == {"batch_ms": 100.0}
    assert t.call_timeout_s(sc) == 10.0 + sc.flops / 5e7


@pytest.mark.parametrize(
    "text, value",
    [("2*m*n*k", 2 * 3 * 4 * 5), ("4*(m*k + k*n)", 4 * (15 + 20)), ("min(m, n) ** 2 // 3", 3), ("-m / 2", -1.5),
     ("max(m, 1e3)", 1000.0), ("7", 7)],
)  # fmt: skip
def test_formulas_compute_from_the_scenarios_symbols(text, value):
    assert parse_formula(text)({"m": 3, "n": 4, "k": 5}) == value


@pytest.mark.parametrize(
    "text, says",
    [("2*m*", "does not parse"), ("__import__('os')", "not allowed"), ("m.real", "not allowed"),
     ("abs(m)", "not allowed"), ("m if n else k", "not allowed"), ("'a' * 3", "not allowed"),
     ("[m]", "not allowed"), ("m % 2", "not allowed"), ("max(m, key=n)", "not allowed")],
)  # fmt: skip
def test_formulas_outside_plain_arithmetic_are_refused(text, says):
    with pytest.raises(FormulaError, match=says):
        parse_formula(text)


def _line_of(text: str, piece: str) -> int:
    return text[: text.index(piece)].count("\n") + 1


# (what is replaced in the scaffold's task.toml, by what, the field named, the text the line must hold, said)
BAD_SPECS = [
    ('dtype = "float32"', 'dtype = "float33"', "args.x.dtype", 'dtype = "float33"', "unknown dtype 'float33'"),
    ('dtype = "float32"', 'dtype = "bfloat16"', "args.x.dtype", 'dtype = "bfloat16"', "not available on target cpu"),
    ('shape = ["rows", "cols"]', 'shape = ["rows", "colz"]', "args.x.shape", '"colz"', "'colz' is defined by no scenario"),
    ('value = "scale"', 'value = "scale * alpha"', "args.scale.value", '"scale * alpha"', "'alpha' is defined by no"),
    ('flops = "2*rows*cols"', 'flops = "2*rows*"', "formulas.flops", 'flops = "2*rows*"', "does not parse"),
    ('bytes = "3*4*rows*cols"', 'bytes = "open(rows)"', "formulas.bytes", 'bytes = "open', "not allowed"),
    ('bytes = "3*4*rows*cols"', 'bytes = "rows / (cols - cols)"', "formulas.bytes", "bytes = \"rows /",
     "ZeroDivisionError"),
    ('flops = "2*rows*cols"', 'flops = "9**9**9"', "formulas.flops", 'flops = "9**', "is too large"),
    ('bytes = "3*4*rows*cols"', 'bytes = "rows - 2*rows"', "formulas.bytes", "bytes = \"rows -", "not a number >= 0"),
    ('id = "r{rows}_c{cols}_s{scale}"', 'id = "r{rows}_s{scale}"', "scenarios.id", "[[scenarios.product]]",
     "duplicate scenario id 'r7_s0.5'"),
    ('quick = ["r1_c1_s2.0",', 'quick = ["nope", "r1_c1_s2.0",', "scenarios.quick", '"nope"', "'nope' is not a scenario id"),
    ('target = "cpu"', 'target = "tpu"', "target", 'target = "tpu"', "'tpu' is not a target"),
    ('kind = "output"', 'kind = "result"', "args.out.kind", 'kind = "result"', "expected input, output or scalar"),
    ('dist = "uniform", low = -1.0, high = 1.0', 'dist = "uniform", low = 1.0, high = -1.0', "args.y.init",
     "low = 1.0", "an empty range"),
    ('baseline = "numpy"\nfactor', 'baseline = "cublas"\nfactor', "tolerance.baseline", 'baseline = "cublas"',
     "'cublas' is not a function baseline"),
    ('default = ["numpy"]', 'default = ["numpy", "torch"]', "baselines.default", '"torch"', "'torch' is not a baseline"),
    ('speedup = 1.0', 'speedup = -2', "goal.speedup", "speedup = -2", "a number > 0"),
    ('starting = "kernel.cpp"', 'starting = "missing.cpp"', "kernel.starting", "missing.cpp", "no such file"),
    ('[goal]', '[host_clock]\nhost_ratio = 10.0\n\n[goal]', "host_clock.host_ratio", "host_ratio = 10.0",
     "must lie in [1, 2]"),
    ('[goal]', '[timing]\nchecks = 0\n\n[goal]', "timing.checks", "checks = 0", "must lie in [1, 3]"),
    ('[goal]', '[child.env]\nLD_PRELOAD = "/tmp/x.so"\n\n[goal]', "child.env.LD_PRELOAD", "LD_PRELOAD", "may not set"),
    ('[goal]', '[tolerence]\nrel_l2 = 1\n\n[goal]', "tolerence", "[tolerence]", "unknown field"),
    ('init = { dist = "normal", mean = 0.0, std = 1.0 }', 'init = { dist = "integers", low = 0, high = 9 }',
     "args.x.init.dist", 'low = 0, high = 9', "does not make float32 values"),
    ('[[args]]\nname = "rows"', '[[args]]\nname = "rows"\nsize = 3', "args.rows.size", "size = 3", "unknown field"),
    ('description = ', 'description = "x"\n[kernel]\nsymbol = "a"\n[oops\ndescription = ', "task.toml", "[oops",
     "not valid TOML"),
]  # fmt: skip


@pytest.mark.parametrize(
    "old, new, field, line_holds, says", BAD_SPECS, ids=[b[2] + ":" + b[4][:20] for b in BAD_SPECS]
)
def test_a_bad_spec_is_refused_naming_the_field_and_the_line(folder, old, new, field, line_holds, says):
    path = folder / "task.toml"
    text = path.read_text()
    assert old in text, old
    text = text.replace(old, new, 1)
    path.write_text(text)
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    problems = [p for p in info.value.problems if p.field == field and says in p.message]
    assert problems, str(info.value)
    assert problems[0].line == _line_of(text, line_holds), str(info.value)
    assert problems[0].file == str(path)
    assert re.search(rf"task\.toml:{problems[0].line}: {re.escape(field)}: ", str(info.value))


def test_every_problem_is_reported_at_once(folder):
    path = folder / "task.toml"
    path.write_text(path.read_text().replace('"float32"', '"float99"', 1).replace('"2*rows*cols"', '"2**"'))
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    assert {p.field for p in info.value.problems} >= {"args.x.dtype", "formulas.flops"}


def test_a_cuda_target_is_judged_by_the_torch_task_and_needs_a_cu_kernel(folder):
    path = folder / "task.toml"
    path.write_text(path.read_text().replace('target = "cpu"', 'target = "cuda-sm90"'))
    with pytest.raises(TaskSpecError, match="a cuda-sm90 kernel is a .cu file"):
        load_spec(folder)
    path.write_text(path.read_text().replace("kernel.cpp", "kernel.cu"))
    (folder / "kernel.cu").write_text((folder / "kernel.cpp").read_text())
    assert load_spec(folder).target.language == "cuda"
    assert type(load_folder_task(folder, device="cpu")).__name__ == "CudaDataTask"


def test_a_folder_whose_name_is_not_an_identifier_is_refused(tmp_path):
    folder = scaffold("demo_op", tmp_path)
    renamed = folder.rename(tmp_path / "Demo-Op")
    with pytest.raises(TaskSpecError, match="folder's name"):
        load_spec(renamed)
