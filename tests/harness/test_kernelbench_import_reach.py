"""What `task import-kernelbench` reaches beyond the plain problem (issue 38): a plain tensor attribute of the model
becomes an input (a buffer), a constructor the meta device cannot run is built on CPU and traced, a 64 GiB weight
is never allocated, a missing package is named, a hub download is refused before anything runs, and the probe's
report is cached by the problem's source."""

import importlib.util
import math

import pytest
import torch

from gpu_harness import problem_import
from gpu_harness.kernelbench import KernelBenchImportError, import_kernelbench
from gpu_harness.taskspec import load_spec

from .test_kernelbench_import import PROBLEMS, _copies, _make_inputs, _reference


def test_a_plain_tensor_attribute_is_an_input_made_by_the_models_constructor(tmp_path):
    done = import_kernelbench(PROBLEMS / "recurrent_hidden_attribute.py", parent=tmp_path)
    spec = load_spec(done.folder)
    hidden = next(a for a in spec.inputs if a.name == "hidden")
    assert hidden.shape == ("batch_size", "hidden_size") and hidden.dtype == "float32"
    assert done.plan.adopted == ["hidden"]
    assert any("plain tensor attribute(s) hidden" in n and "taken as buffers" in n for n in done.plan.notes)
    assert "(a plain tensor attribute, taken as a buffer)" in (done.folder / "task.toml").read_text()
    ref = _reference(done.folder)
    params = spec.scenarios[0].params
    args = _make_inputs(spec, ref, params, seed=5)
    # the constructor's torch.randn((batch_size, hidden_size)): a standard normal draw of that shape
    draws = torch.cat([_make_inputs(spec, ref, params, seed)["hidden"].ravel() for seed in range(50)])
    assert abs(draws.mean().item()) < 0.1 and abs(draws.std().item() - 1) < 0.1
    got = ref.reference(**_copies(spec, args))["out"]
    x, h0 = args["x"], args["initial_hidden"]
    h = torch.tanh(torch.cat((x, h0), dim=1) @ args["i2h_weight"].T + args["i2h_bias"])
    want = h @ args["h2o_weight"].T + args["h2o_bias"]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    again = ref.reference(**_copies(spec, _make_inputs(spec, ref, params, seed=5)))["out"]
    assert torch.equal(got, again)  # the state the forward assigns is not carried from one call to the next


def test_a_loose_tensor_of_the_model_imports_as_an_input(tmp_path):
    done = import_kernelbench(PROBLEMS / "loose_tensor.py", parent=tmp_path)
    spec = load_spec(done.folder)
    assert [a.name for a in spec.inputs] == ["x", "table"]
    ref = _reference(done.folder)
    args = _make_inputs(spec, ref, spec.scenarios[0].params, seed=1)
    assert torch.equal(ref.reference(**_copies(spec, args))["out"], args["x"] + args["table"])


def test_a_constructor_that_reads_a_value_is_built_on_cpu_and_traced_on_the_meta_device(tmp_path):
    done = import_kernelbench(PROBLEMS / "item_in_constructor.py", parent=tmp_path)
    spec = load_spec(done.folder)
    assert [sc.params["case"] for sc in spec.scenarios] == ["main", "half", "odd", "double"]
    assert not any("meta device" in n for n in done.plan.notes)
    assert spec.inputs[0].shape == ("batch_size", "dim")


def test_a_64_gib_weight_is_never_allocated_its_data_checks_run_at_reduced_model_sizes(tmp_path):
    done = import_kernelbench(PROBLEMS / "huge_weight_linear.py", parent=tmp_path)
    spec = load_spec(done.folder)
    weight = next(a for a in spec.inputs if a.name == "linear_weight")
    main = spec.scenarios[0].params
    assert math.prod(spec.shape(weight, main)) * 4 == 64 << 30
    assert [sc.params["case"] for sc in spec.scenarios] == ["main", "half", "odd", "double"]
    assert [n for n in done.plan.notes if n.startswith("the data checks ran on CPU at")] == [
        "the data checks ran on CPU at in_features = 2048, out_features = 2048 (the problem's sizes, the model's"
        " too, reduced: its tensors take 64 GiB at its sizes)"
    ]


def test_data_checks_beyond_this_machines_memory_are_refused_before_allocating_anything(tmp_path):
    with pytest.raises(KernelBenchImportError) as e:
        import_kernelbench(PROBLEMS / "unscalable_huge_input.py", parent=tmp_path)
    assert str(e.value).startswith(
        "unscalable_huge_input.py: its data checks run on CPU at its own sizes (no smaller sizes keep the model),"
        " where its inputs, weights and outputs take 100 GiB, about 800 GiB with the forward's and the checks'"
        " copies: more than the "
    )
    assert str(e.value).endswith("Import it on a machine with more memory, or make its sizes smaller")


@pytest.mark.skipif(importlib.util.find_spec("einops") is not None, reason="einops is installed here")
def test_a_missing_package_is_named_with_what_to_install_and_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("KSEEK_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(KernelBenchImportError) as e:
        import_kernelbench(PROBLEMS / "needs_einops.py", parent=tmp_path / "out")
    assert str(e.value) == "needs_einops.py needs einops: pip install einops (not installed here; imported at line 5)"
    assert not (tmp_path / "cache" / "kernelbench-probe").exists() or not any(
        (tmp_path / "cache" / "kernelbench-probe").iterdir()
    )  # installed later, it imports: the refusal is not remembered


def test_a_hub_download_is_refused_at_once_without_running_anything(tmp_path, monkeypatch):
    def no_probe(*args, **kwargs):
        raise AssertionError("the probe ran")

    monkeypatch.setattr(problem_import, "_run_child", no_probe)
    with pytest.raises(KernelBenchImportError) as e:
        import_kernelbench(PROBLEMS / "hub_pretrained.py", parent=tmp_path)
    assert str(e.value) == (
        "hub_pretrained.py downloads its model from a hub (AutoModelForCausalLM.from_pretrained (line 11),"
        " AutoConfig.from_pretrained (line 18)): the harness and its workers never reach one, so it cannot be"
        " imported here; a problem must build its model from its own code (nothing was run)"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_probes_report_is_reused_for_the_same_source_and_not_for_another(tmp_path, monkeypatch):
    from gpu_harness.kernelbench import probe_key

    monkeypatch.setenv("KSEEK_CACHE_DIR", str(tmp_path / "cache"))
    source = (PROBLEMS / "sum_over_dim.py").read_text()
    problem = tmp_path / "sum_over_dim.py"
    problem.write_text(source)
    first = import_kernelbench(problem, name="first", parent=tmp_path / "out")
    assert not first.plan.cached
    assert (tmp_path / "cache" / "kernelbench-probe" / f"{probe_key(problem.read_bytes())}.json").is_file()

    def no_probe(*args, **kwargs):
        raise AssertionError("the probe ran again")

    with monkeypatch.context() as m:
        m.setattr(problem_import, "_run_child", no_probe)
        second = import_kernelbench(problem, name="second", parent=tmp_path / "out")
    assert second.plan.cached
    a, b = load_spec(first.folder), load_spec(second.folder)
    assert [sc.params for sc in a.scenarios] == [sc.params for sc in b.scenarios]
    assert [(x.name, x.shape) for x in a.args] == [(x.name, x.shape) for x in b.args]
    problem.write_text(source + "\n# edited\n")
    assert not import_kernelbench(problem, name="third", parent=tmp_path / "out").plan.cached
