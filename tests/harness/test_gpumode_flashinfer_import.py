"""`task import-gpumode` and `task import-flashinfer` (gpu_harness/gpumode.py, flashinfer.py): the fixtures written
from the formats' public descriptions (tests/fixtures/gpumode, tests/fixtures/flashinfer) import as suites whose
every task passes `task check`, with the manifest's format; an imported task's reference is the problem's own, on
inputs scaled and shifted, its arguments compared strictly; what cannot be imported is refused naming why."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gpu_harness.flashinfer import FlashInferImportError, import_flashinfer
from gpu_harness.gpumode import GpuModeImportError, import_gpumode, read_problem
from gpu_harness.taskspec import load_spec

from .test_kernelbench_import import _load

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "gpu_harness", "task", *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _inputs(spec, ref, params, seed):
    args = {}
    gen = torch.Generator("cpu").manual_seed(seed)  # one generator per seed, as the judge makes them
    for a in spec.args:
        if a.kind == "input":
            args[a.name] = getattr(ref, a.init.function)(gen, spec.shape(a, params), params)
        elif a.kind == "scalar":
            v = a.value(params)
            args[a.name] = int(v) if a.dtype.startswith("int") else float(v)
    return args


@pytest.mark.parametrize(
    "command, fixtures, tasks",
    [
        ("import-gpumode", "gpumode", ["rmsnorm_py", "softmax_py", "vectoradd_py"]),
        ("import-flashinfer", "flashinfer", ["gemm_n64_k96", "rmsnorm_h128"]),
    ],
)
def test_a_formats_fixtures_import_as_a_suite_whose_every_task_passes_its_check(tmp_path, command, fixtures, tasks):
    out = tmp_path / "out"
    done = cli(command, str(FIXTURES / fixtures), "--dir", str(out), "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        f"{len(tasks)} imported and checked, 0 imported but too large to check here, 0 refused, 0 failed" in done.stdout
    )
    manifest = json.loads((out / "suite.json").read_text())
    assert manifest["format"] == command.removeprefix("import-")
    assert manifest["written_by"] == f"python -m gpu_harness task {command}"
    assert sorted(e["name"] for e in manifest["problems"]) == tasks
    for e in manifest["problems"]:
        assert e["outcome"] == "imported" and e["check"].startswith("ran on ") and len(e["sha256"]) == 64
        assert e["abi"] == load_spec(out / e["name"]).abi()
    again = cli(command, str(FIXTURES / fixtures), "--dir", str(out), cwd=tmp_path)  # resumable: nothing to do
    assert again.returncode == 0 and again.stderr.count("skipped: imported as") == len(tasks), again.stderr


def test_a_gpumode_task_maps_the_data_and_its_reference_is_the_problems_ref_kernel(tmp_path):
    done = import_gpumode(FIXTURES / "gpumode" / "vectoradd_py", parent=tmp_path)
    spec = load_spec(done.folder)
    assert (
        spec.abi() == 'extern "C" int kseek_vectoradd_py(const __half* a, const __half* b, __half* out, int64_t size);'
    )
    assert [sc.id for sc in spec.scenarios] == ["test_size31", "test_size64", "bench_size256"]  # test 3: a repeat
    assert list(spec.quick_ids) == ["test_size31", "test_size64"]
    assert "generate_input's out: output buffers, the kernel's outputs" in done.plan.notes
    ref = _load(done.folder / "reference.py", "gm_vectoradd")
    params = spec.scenarios[0].params
    args = _inputs(spec, ref, params, seed=5)
    a, b = args["a"], args["b"]
    assert a.dtype == torch.float16 and abs(float(a.float().mean())) > 0.2  # scaled and shifted
    assert torch.equal(ref.reference(**args)["out"], a + b)
    assert torch.equal(_inputs(spec, ref, params, seed=5)["a"], a)  # made again from the same seed
    with pytest.raises(ValueError, match="extra stray"):
        ref.reference(**args, stray=a)
    del args["b"]
    with pytest.raises(ValueError, match="missing b"):
        ref.reference(**args)


def test_a_flashinfer_task_binds_the_workloads_and_its_reference_is_the_definitions_run(tmp_path):
    done = import_flashinfer(FIXTURES / "flashinfer" / "definitions" / "rmsnorm" / "rmsnorm_h128.json", parent=tmp_path)
    spec = load_spec(done.folder)
    assert spec.abi() == (
        'extern "C" int kseek_rmsnorm_h128(const __nv_bfloat16* hidden_states, const __nv_bfloat16* weight, '
        "__nv_bfloat16* output, float eps, int64_t batch_size);"
    )
    assert [sc.id for sc in spec.scenarios] == ["w0_batch_size3", "w1_batch_size16", "w2_batch_size100"]
    ref = _load(done.folder / "reference.py", "fi_rmsnorm")
    assert ref.SCALED == ["hidden_states", "weight"]
    args = _inputs(spec, ref, spec.scenarios[1].params, seed=3)
    x = args["hidden_states"].float()
    want = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * args["weight"].float()).bfloat16()
    assert torch.equal(ref.reference(**args)["output"], want)
    assert abs(float(x.mean())) > 0.2 or abs(float(x.std()) - 1) > 0.3  # not a standard normal
    with pytest.raises(ValueError, match="extra stray"):
        ref.reference(**args, stray=1)


def _copy_gpumode(tmp_path: Path, problem: str = "softmax_py") -> Path:
    root = tmp_path / "problems"
    shutil.copytree(FIXTURES / "gpumode", root)
    return root / problem


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda yml: yml.replace("files:", "sources:"), "no files field"),
        (lambda yml: yml.split("tests:")[0], "no tests"),
        (lambda yml: yml + "multi_gpu: true\n", "multi_gpu: a task runs on one GPU"),
        (lambda yml: yml.replace('"../utils.py"', '"../missing.py"'), "utils.py's source ../missing.py is not there"),
        (lambda yml: yml.replace('"rows": 7, ', ""), "do not all give the same arguments"),
    ],
)
def test_a_gpumode_task_yml_that_lacks_what_the_format_needs_is_refused_before_anything_runs(tmp_path, edit, says):
    problem = _copy_gpumode(tmp_path)
    (problem / "task.yml").write_text(edit((problem / "task.yml").read_text()))
    with pytest.raises(GpuModeImportError, match=says):
        read_problem(problem)


@pytest.mark.parametrize("source", ["../../secret.py", "{secret}", "../linked.py"])
def test_a_gpumode_file_source_outside_the_problems_folders_is_refused_and_not_copied(tmp_path, source):
    """A downloaded task.yml names its sources: one outside the problem's repository (or, in none, the folder
    above the problem) is refused, whether a path up, an absolute path or a link out, so no file of the importing
    user's ends up in the task. The problem's own `../utils.py` (the fixture's) still imports: test above."""
    problem = _copy_gpumode(tmp_path)
    secret = tmp_path / "secret.py"
    secret.write_text("TOKEN = 'not for the task'\n")
    (problem.parent / "linked.py").symlink_to(secret)
    yml = (problem / "task.yml").read_text()
    (problem / "task.yml").write_text(yml.replace('"../utils.py"', json.dumps(source.format(secret=secret))))
    with pytest.raises(GpuModeImportError, match=f"utils.py's source .* is outside {problem.parent}"):
        read_problem(problem)
    (tmp_path / ".git").mkdir()  # in a repository, its root bounds the sources instead
    (problem / "task.yml").write_text(yml.replace('"../utils.py"', '"../../secret.py"'))
    assert read_problem(problem).files["utils.py"] == secret.read_bytes()


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda src: "import einops\n" + src, "needs einops: pip install einops"),
        (lambda src: src.replace("check_implementation = ", "_check = "), "defines no check_implementation"),
        (
            lambda src: (
                src.split("check_implementation = ")[0] + "def check_implementation(data, output):\n"
                '    return False, "never right"\n'
            ),
            "the reference fails its own check_implementation: never right",
        ),
        (  # an input updated in place though not returned: once imported, the timed ref_kernel rewrote its inputs
            lambda src: src.replace("    return torch.softmax(", "    x.mul_(2.0)\n    return torch.softmax("),
            "item 0 is read and written by ref_kernel \\(an update in place\\)",
        ),
    ],
)
def test_a_gpumode_reference_that_cannot_be_a_task_is_refused_naming_why(tmp_path, edit, says):
    problem = _copy_gpumode(tmp_path)
    (problem / "reference.py").write_text(edit((problem / "reference.py").read_text()))
    with pytest.raises(GpuModeImportError, match=says):
        import_gpumode(problem, parent=tmp_path / "out", cache=False)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _copy_definition(tmp_path: Path) -> tuple[Path, dict, Path]:
    shutil.copytree(FIXTURES / "flashinfer", tmp_path / "set")
    path = tmp_path / "set" / "definitions" / "rmsnorm" / "rmsnorm_h128.json"
    return path, json.loads(path.read_text()), tmp_path / "set" / "workloads" / "rmsnorm" / "rmsnorm_h128.jsonl"


def _edit_workloads(path: Path, edit) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for entry in lines:
        edit(entry["workload"])
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda d, w: d.pop("reference"), "no reference"),
        (
            lambda d, w: d["inputs"]["weight"].update(dtype="float8_e4m3fn"),
            "dtype float8_e4m3fn is not one a task holds",
        ),
        (lambda d, w: d["inputs"]["weight"].update(shape=["hidden"]), "axis 'hidden' is not in axes"),
        (lambda d, w: d.update(reference="def main():\n    pass\n"), "no top-level function run"),
        (lambda d, w: w.unlink(), "no workloads"),
        (  # a definition's op_type names a folder: one up and out would take a .jsonl of the user's
            lambda d, w: (shutil.copy(w, w.parents[3]), d.update(op_type="../..")),
            "op_type '../..' and name 'rmsnorm_h128' lead outside the trace set's workloads/",
        ),
        (lambda d, w: _edit_workloads(w, lambda x: x["axes"].update(tokens=4)), "extra tokens"),
        (lambda d, w: _edit_workloads(w, lambda x: x["axes"].clear()), "missing batch_size"),
        # sizes that are not whole numbers >= 0: once a TypeError traceback ("five") or a folder load_spec refused
        (lambda d, w: _edit_workloads(w, lambda x: x["axes"].update(batch_size="five")), "batch_size = 'five': each"),
        (lambda d, w: _edit_workloads(w, lambda x: x["axes"].update(batch_size=True)), "batch_size = True: each"),
        (lambda d, w: _edit_workloads(w, lambda x: x["axes"].update(batch_size=-5)), "batch_size = -5: each"),
        (lambda d, w: d["axes"]["hidden_size"].update(value=-3), "axis hidden_size: .*an int >= 0"),
        # the definition's own ValueError is a failure of its reference (once said as its bare message: "error: 1");
        # the generated reference's ValueErrors keep their own sentence
        (
            lambda d, w: d.update(reference="def run(hidden_states, weight, eps):\n    raise ValueError(1)\n"),
            r"^its reference fails on the smallest workload: ValueError: 1 \(the reference's line 2\)$",
        ),
        (
            lambda d, w: d.update(reference="def run(hidden_states, weight, eps):\n    return hidden_states, weight\n"),
            r"^the reference returned 2 output\(s\), the definition has 1$",
        ),
        (
            lambda d, w: _edit_workloads(w, lambda x: x["inputs"].update(bias={"type": "random"})),
            "are not the definition's",
        ),
        (
            lambda d, w: _edit_workloads(w, lambda x: x["inputs"].update(weight={"type": "safetensors", "path": "w"})),
            "none of its workloads can be a scenario .*safetensors",
        ),
    ],
)
def test_a_flashinfer_definition_that_cannot_be_a_task_is_refused_naming_why(tmp_path, edit, says):
    path, definition, workloads = _copy_definition(tmp_path)
    edit(definition, workloads)
    path.write_text(json.dumps(definition))
    with pytest.raises(FlashInferImportError, match=says):
        import_flashinfer(path, parent=tmp_path / "out", cache=False)
    assert not (tmp_path / "out").exists()


def test_a_flashinfer_reference_needing_a_package_not_here_is_refused_naming_it(tmp_path):
    path, definition, _ = _copy_definition(tmp_path)
    definition["reference"] = "import einops\n" + definition["reference"]
    path.write_text(json.dumps(definition))
    with pytest.raises(FlashInferImportError, match="needs einops: pip install einops"):
        import_flashinfer(path, parent=tmp_path / "out", cache=False)
