"""The files of an imported gpu-mode task: task.toml and reference.py, rendered from a gpumode.Plan.

reference.py is tables and thin functions; the work (loading problem/, generate_input on the judge's seed,
ref_kernel on the data rebuilt from the task's arguments) is gpumode_runtime.Problem's. docs/tasks.md, "Importing
a gpu-mode problem", describes both files.
"""

from __future__ import annotations

import json
from string import Template
from typing import Any

from .problem_import import DEFENCES_COMMENT, tolerance_lines, toml

# a gpumode.Plan, named but not imported, not even for the type checker: gpumode imports this module, and
# tests/foundation/test_layering.py refuses the cycle
Plan = Any


REFERENCE_PY = Template('''\
"""$name: the gpu-mode problem $folder as a cuda-sm90 task, written by `python -m gpu_harness task import-gpumode`
(docs/tasks.md, "Importing a gpu-mode problem"). problem/ holds the problem's files, copied unchanged; this file
only wires them to the task's arguments (gpu_harness/gpumode_runtime.py). Regenerate rather than edit the tables.

What the harness calls here, every argument by its name in task.toml's [[args]]:
- reference(**inputs, **scalars): ref_kernel on generate_input's data rebuilt from the inputs (in their own
  dtypes: the problem's reference as it is written), on the judge's device; returns the outputs by name;
- ref_kernel(**inputs, **outputs, **scalars): the same, writing the outputs in place (the timed baseline);
- float64(...): the same with every float tensor widened to float64 (the tolerance's measure of the reference's
  own error), writing the outputs rounded to their dtype;
- make_<input>(generator, shape, params): generate_input(**test, seed) on the judge's seed, each input its item.
"""

from pathlib import Path

from gpu_harness.gpumode_runtime import Problem

$tables
PROBLEM = Problem(Path(__file__).resolve().with_name("problem"), globals())


def reference(**args):
    return PROBLEM.run(args)


def ref_kernel(**args):
    for name, value in PROBLEM.run(args).items():
        args[name].copy_(value)


def float64(**args):
    for name, value in PROBLEM.run(args, wide=True).items():
        args[name].copy_(value)
''')

MAKE_FUNCTION = Template("""

def make_$name(generator, shape, params):
    return PROBLEM.make("$name", generator, shape, params)
""")


def _tables(plan: Plan) -> str:
    dims = {t.name: t.dims for t in plan.tensors}
    dtypes = {t.name: t.dtype for t in plan.tensors}
    tables = [
        ("DATA", [list(d) for d in plan.data], "generate_input's items: (role, ABI name) each"),
        ("CONTAINER", plan.container, "what generate_input returns: a tensor, a tuple or a list"),
        ("OUTPUTS", plan.outputs, "ref_kernel's outputs, in order"),
        ("DIMS", dims, "each tensor's dimensions: a size (an argument of the task) or a number"),
        ("DTYPES", dtypes, "each tensor's dtype in the problem (bool travels as uint8)"),
        ("TEST_ARGS", plan.test_args, "generate_input's arguments but seed (the scenario's values)"),
        ("SCALED", plan.scaled, "inputs given as x * s + b (gpu_harness/imported_inputs.py)"),
        (
            "ARGS",
            [t.name for t in plan.tensors if t.role != "output"] + [s["name"] for s in plan.scalars],
            "every argument but the outputs, each given to every call",
        ),
    ]
    return "".join(f"# {comment}\n{name} = {json.dumps(value)}\n" for name, value, comment in tables)


def render_reference(plan: Plan) -> str:
    text = REFERENCE_PY.substitute(name=plan.name, folder=plan.folder, tables=_tables(plan))
    for t in plan.of("input"):
        text += MAKE_FUNCTION.substitute(name=t.name)
    return text


def render_toml(plan: Plan) -> str:
    lines = [
        f"# {plan.name}: the gpu-mode problem {plan.folder}, imported by `python -m gpu_harness task import-gpumode`",
        '# (docs/tasks.md, "Importing a gpu-mode problem"). problem/ is the problem as given; reference.py runs it.',
        *DEFENCES_COMMENT,
        f"description = {toml(plan.description)}",
        'target = "cuda-sm90"',
        "",
        "[kernel]",
        f'symbol = "kseek_{plan.name}"  # no starting kernel: the agent starts from a stub that says "not supported"',
        "",
        "# The ABI: generate_input's tensors that ref_kernel reads, its outputs, then one int64 per size.",
    ]
    for t in plan.tensors:
        if t.role == "unused":
            continue
        kind = "output" if t.role == "output" else "input"
        dtype = "uint8" if t.dtype == "bool" else t.dtype
        what = "ref_kernel's output" if kind == "output" else "an item of generate_input's data"
        lines += ["", f"[[args]]  # {what}", f"name = {toml(t.name)}", f'kind = "{kind}"', f'dtype = "{dtype}"']
        lines.append(f"shape = {toml(t.dims)}")
        if kind == "input":
            lines.append(f"init = {{ function = {toml('make_' + t.name)} }}")
    for s in plan.scalars:
        lines += ["", "[[args]]", f"name = {toml(s['name'])}", 'kind = "scalar"', f'dtype = "{s["dtype"]}"']
        lines.append(f"value = {toml(s['value'])}")
    case_key = plan.id_template[1 : plan.id_template.index("}")]
    flops_key = next(k for k in plan.scenarios[0] if k.startswith("gm_flops"))
    lines += [
        "",
        "[reference]",
        'function = "reference"',
        "",
        "# one scenario per test (case test: the quick subset) and per benchmark (case bench) of task.yml, its",
        f"# arguments but the seed; {flops_key}: torch's count of ref_kernel's flops, or the largest tensor's elements.",
        "[scenarios]",
        f"id = {toml(plan.id_template)}",
        "list = [",
        *(f"    {toml(p)}," for p in plan.scenarios),
        "]",
        f"quick = {toml(plan.quick)}",
        "",
        "[formulas]",
        f'flops = "{flops_key}"',
        "",
        *tolerance_lines(
            case_key,
            [p[case_key] for p in plan.scenarios],
            plan.terms,
            plan.unit_roundoff,
            ("float64", "ref_kernel"),
            "ref_kernel",
        ),  # fmt: skip
        "",
        "[baselines]",
        'default = ["ref_kernel"]',
        'ref_kernel = { function = "ref_kernel" }',
        "# the problem in float64: the tolerance's measure of ref_kernel's own error (never timed)",
        'float64 = { function = "float64", may_refuse = true }',
        "",
        "[goal]",
        'baseline = "ref_kernel"',
        "speedup = 1.0",
        "",
    ]
    return "\n".join(lines)
