"""The task spec loader's edges (gpu_harness/taskspec.py): for each field, each way it can be wrong and the
exact problems the loader reports (field, message, line), all at once; what a good spec's fields become; the
formula language's edges. Written to kill the mutants `make mutation` found surviving."""

import math
import os

import pytest

from gpu_harness.taskscaffold import scaffold
from gpu_harness.taskspec import (
    Arg,
    Baseline,
    FormulaError,
    SpecProblem,
    TaskSpecError,
    Tolerance,
    load_spec,
    parse_formula,
)
from gpu_harness.taskspec.lines import _Lines
from gpu_harness.taskspec.spec import _relative


@pytest.fixture
def folder(tmp_path):
    return scaffold("demo_op", tmp_path)


def edited(folder, *edits):
    """The folder's task.toml with each (old, new) replaced once; returns the new text."""
    path = folder / "task.toml"
    text = path.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text)
    return text


def problems_of(folder, *edits):
    """(line, field, message) of every problem, in the order reported."""
    edited(folder, *edits)
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    return [(p.line, p.field, p.message) for p in info.value.problems]


def line_of(folder, piece):
    text = (folder / "task.toml").read_text()
    assert piece in text, piece
    return text[: text.index(piece)].count("\n") + 1


def expect(folder, *edits, want):
    """The problems after the edits are exactly `want`: (the text the line holds or None, field, message)."""
    got = problems_of(folder, *edits)
    assert got == [(None if piece is None else line_of(folder, piece), f, m) for piece, f, m in want]


BASELINES = 'numpy = { function = "numpy_scale_add" }'
X_INIT = 'init = { dist = "normal", mean = 0.0, std = 1.0 }'
SC_LIST = "list = [{ rows = 1, cols = 1, scale = 2.0 }]"
TOLERANCE = 'baseline = "numpy"\nfactor = 2.0\nfloor = 1e-6'
OUT = 'name = "out"\nkind = "output"\ndtype = "float32"\n'
NOT_QUICK = "'r1_c1_s2.0' is not a scenario id"

# (id, edits, problems: (text on the line or None, field, message))
CASES = [
    ("symbol missing", [('symbol = "kseek_demo_op"  #', "#")], [("[kernel]", "kernel.symbol", "None is not a C identifier")]),
    ("symbol not C", [('symbol = "kseek_demo_op"', 'symbol = "9x"')], [('symbol = "9x"', "kernel.symbol", "'9x' is not a C identifier")]),
    ("symbol with a dash", [('symbol = "kseek_demo_op"', 'symbol = "a-b"')], [('symbol = "a-b"', "kernel.symbol", "'a-b' is not a C identifier")]),
    ("starting empty", [('starting = "kernel.cpp"', 'starting = ""')],
     [('starting = ""', "kernel.starting", "expected a path (relative to the task folder), got ''")]),
    ("starting a number", [('starting = "kernel.cpp"', "starting = 3")],
     [("starting = 3", "kernel.starting", "expected a path (relative to the task folder), got 3")]),
    ("kernel not a table", [("[kernel]\n", 'kernel = 3\n[kern]\n')],
     [("[kern]", "kern", "unknown field (known: args, baselines, call_timeout, cheats, child, description, formulas, "
       "goal, host_clock, judge, kernel, reference, scenarios, spot_check, target, timing, tolerance)"),
      ("kernel = 3", "kernel", "must be a table ([kernel])"), ('symbol = "kseek', "kernel.symbol", "None is not a C identifier")]),
    ("no target", [('target = "cpu"', "# no target")], [(None, "target", "None is not a target (known: cpu, cuda-sm90)")]),
    ("unknown top-level key", [("description = ", "speed = 1\ndescription = ")],
     [("speed = 1", "speed", "unknown field (known: args, baselines, call_timeout, cheats, child, description, "
       "formulas, goal, host_clock, judge, kernel, reference, scenarios, spot_check, target, timing, tolerance)")]),
    ("arg name not C", [('name = "y"', 'name = "2y"')], [('name = "2y"', "args[1].name", "'2y' is not a C identifier")]),
    ("arg name missing", [('name = "y"\n', "")], [("[[args]]\nkind", "args[1].name", "None is not a C identifier")]),  # not the next name
    ("arg name twice", [('name = "y"', 'name = "x"')], [('name = "x"\nkind = "input"\ndtype = "float32"\nshape = ["rows", "cols"]\ninit = { dist = "uniform"',
                                                       "args.x.name", "a second argument of this name")]),
    ("scalar dtype", [('name = "rows"\nkind = "scalar"\ndtype = "int32"', 'name = "rows"\nkind = "scalar"\ndtype = "int8"')],
     [('dtype = "int8"', "args.rows.dtype", "unknown scalar dtype 'int8' (known: int32, int64, float32, float64)")]),
    ("scalar without a value", [('value = "rows"\n', "")],
     [('[[args]]\nname = "rows"', "args.rows.value", "a scalar needs a value (a formula of the scenario's symbols)")]),
    ("scalar value does not parse", [('value = "rows"', 'value = "rows +"')],
     [('value = "rows +"', "args.rows.value", "'rows +' does not parse: invalid syntax")]),
    ("negative size", [(OUT + 'shape = ["rows", "cols"]', OUT + 'shape = ["rows", -1]')],
     [('shape = ["rows", -1]', "args.out.shape", """['rows', -1]: expected a list of symbols or sizes, e.g. ["m", "k"]"""),
      (None, "args", "no argument is an output: there would be nothing to judge")]),
    ("shape not a list", [(OUT + 'shape = ["rows", "cols"]', OUT + 'shape = "rows"')],
     [('shape = "rows"', "args.out.shape", """'rows': expected a list of symbols or sizes, e.g. ["m", "k"]"""),
      (None, "args", "no argument is an output: there would be nothing to judge")]),
    ("shape of a bool", [(OUT + 'shape = ["rows", "cols"]', OUT + 'shape = ["rows", true]')],
     [('shape = ["rows", true]', "args.out.shape", """['rows', True]: expected a list of symbols or sizes, e.g. ["m", "k"]"""),
      (None, "args", "no argument is an output: there would be nothing to judge")]),
    ("shape symbol not a name", [(OUT + 'shape = ["rows", "cols"]', OUT + 'shape = ["rows", "2c"]')],
     [('shape = ["rows", "2c"]', "args.out.shape", """['rows', '2c']: expected a list of symbols or sizes, e.g. ["m", "k"]"""),
      (None, "args", "no argument is an output: there would be nothing to judge")]),
    ("an output with an init", [(OUT, OUT + 'init = { dist = "normal" }\n')],
     [('[[args]]\nname = "out"', "args.out.init", "an output is not made from the seed (it is poisoned)")]),
    ("no output", [('name = "out"\nkind = "output"', 'name = "out"\nkind = "input"')],
     [(None, "args", "no argument is an output: there would be nothing to judge")]),
    ("an integer input needs an init", [('dtype = "float32"\nshape = ["rows", "cols"]\n' + X_INIT, 'dtype = "int32"\nshape = ["rows", "cols"]')],
     [('[[args]]\nname = "x"', "args.x.init", 'how the input is made from the seed, e.g. {dist = "normal"}')]),  # not y's init
    ("init function and more", [(X_INIT, 'init = { function = "make_x", dist = "normal" }')],
     [("init = { function", "args.x.init", 'a function of reference.py alone: {function = "make_x"}')]),
    ("init function not a name", [(X_INIT, 'init = { function = "make x" }')],
     [("init = { function", "args.x.init", 'a function of reference.py alone: {function = "make_x"}')]),
    ("init not a table", [(X_INIT, "init = 3")], [("init = 3", "args.x.init", 'how the input is made from the seed, e.g. {dist = "normal"}')]),
    ("unknown dist", [(X_INIT, 'init = { dist = "poisson" }')],
     [("init = { dist", "args.x.init.dist", "'poisson': expected one of normal, uniform, integers (or init = {function = ...})")]),
    ("a bool mean", [(X_INIT, 'init = { dist = "normal", mean = true }')], [("init = { dist", "args.x.init.mean", "expected a number, got True")]),
    ("an infinite std", [(X_INIT, 'init = { dist = "normal", std = inf }')], [("init = { dist", "args.x.init.std", "expected a number, got inf")]),
    ("a string low", [('low = -1.0', 'low = "a"')], [('low = "a"', "args.y.init.low", "expected a number, got 'a'")]),
    ("a key of another dist", [(X_INIT, 'init = { dist = "normal", low = 1.0 }')], [("init = { dist", "args.x.init.low", "unknown field for dist = 'normal'")]),
    ("a zero std", [(X_INIT, 'init = { dist = "normal", std = 0.0 }')], [("init = { dist", "args.x.init", "an empty range: mean = 0, std = 0")]),
    ("an empty uniform range", [('low = -1.0, high = 1.0', "low = 1.0, high = 1.0")],
     [("low = 1.0", "args.y.init", "an empty range: low = 1, high = 1")]),
    ("normal integers", [('dtype = "float32"\nshape = ["rows", "cols"]\n' + X_INIT, 'dtype = "int32"\nshape = ["rows", "cols"]\n'
                          'init = { dist = "normal" }')], [("init = { dist", "args.x.init.dist", "normal does not make int32 values")]),
    ("integers without bounds", [('dtype = "float32"\nshape = ["rows", "cols"]\n' + X_INIT, 'dtype = "int32"\nshape = ["rows", "cols"]\n'
                                  'init = { dist = "integers" }')], [("init = { dist", "args.x.init.low", "expected a number, got None")]),
    ("an unknown reference field", [('function = "reference"  #', 'function = "reference"\nspeedy = true  #')],
     [("speedy = true", "reference.speedy", "unknown field (its fields: fast, function, precision)")]),
    ("reference not a name", [('function = "reference"  #', 'function = "not a name"  #')],
     [('function = "not a name"', "reference.function", "'not a name' is not a function name")]),
    ("reference a number", [('function = "reference"  #', "function = 3  #")], [("function = 3", "reference.function", "3 is not a function name")]),
    ("no id template", [('id = "r{rows}_c{cols}_s{scale}"', "")],
     [("[scenarios]", "scenarios.id", 'an id template such as "m{m}_n{n}" is needed (stable ids)')]),
    ("an unclosed field", [('id = "r{rows}_c{cols}_s{scale}"', 'id = "r{rows"')],
     [('id = "r{rows"', "scenarios.id", "'r{rows': expected '}' before end of string")]),
    ("an id without fields", [('id = "r{rows}_c{cols}_s{scale}"', 'id = "fixed"')],
     [('id = "fixed"', "scenarios.id", "'fixed': each {field} must be one symbol's name")]),
    ("an id with a positional field", [('id = "r{rows}_c{cols}_s{scale}"', 'id = "r{0}"')],
     [('id = "r{0}"', "scenarios.id", "'r{0}': each {field} must be one symbol's name")]),
    ("a list of numbers", [(SC_LIST, "list = [1, 2]")],
     [("list = [1, 2]", "scenarios.list", "expected a list of tables, e.g. [{m = 1, n = 2}]"), ("quick = ", "scenarios.quick", NOT_QUICK)]),
    ("a list not a list", [(SC_LIST, 'list = "r1"')],
     [('list = "r1"', "scenarios.list", "expected a list of tables, e.g. [{m = 1, n = 2}]"), ("quick = ", "scenarios.quick", NOT_QUICK)]),
    ("an empty axis", [("rows = [7, 128, 1000]", "rows = []")],
     [("[[scenarios.product]]", "scenarios.product[0]", "each axis is a non-empty list of values"),
      ("quick = ", "scenarios.quick", "'r7_c33_s0.5' is not a scenario id"),
      ("quick = ", "scenarios.quick", "'r1000_c257_s0.5' is not a scenario id")]),
    ("an axis not a list", [("rows = [7, 128, 1000]", "rows = 7")],
     [("[[scenarios.product]]", "scenarios.product[0]", "each axis is a non-empty list of values"),
      ("quick = ", "scenarios.quick", "'r7_c33_s0.5' is not a scenario id"),
      ("quick = ", "scenarios.quick", "'r1000_c257_s0.5' is not a scenario id")]),
    ("a product not a table", [("[[scenarios.product]]\nrows = [7, 128, 1000]\ncols = [33, 257, 1024]\nscale = [0.5]", ""),
                               (SC_LIST, SC_LIST + "\nproduct = 3")],
     [(None, "scenarios.product", "expected [[scenarios.product]] tables of axes"),
      ("quick = ", "scenarios.quick", "'r7_c33_s0.5' is not a scenario id"),
      ("quick = ", "scenarios.quick", "'r1000_c257_s0.5' is not a scenario id")]),
    ("no scenarios", [(SC_LIST, ""), ("[[scenarios.product]]\nrows = [7, 128, 1000]\ncols = [33, 257, 1024]\nscale = [0.5]", "")],
     [("[scenarios]", "scenarios", "no scenarios: give scenarios.list and/or [[scenarios.product]]"),
      ("quick = ", "scenarios.quick", NOT_QUICK), ("quick = ", "scenarios.quick", "'r7_c33_s0.5' is not a scenario id"),
      ("quick = ", "scenarios.quick", "'r1000_c257_s0.5' is not a scenario id")]),
    # a boolean is a scenario value (attention's causal), but not a number where a scalar's value needs one
    ("a bool value", [(SC_LIST, "list = [{ rows = 1, cols = 1, scale = true }]")],
     [("quick = ", "scenarios.quick", NOT_QUICK),
      ('value = "scale"', "args.scale.value", "'scale' on scenario r1_c1_sTrue: True is not a number")]),
    ("a list value", [(SC_LIST, "list = [{ rows = 1, cols = 1, scale = [2] }]")],
     [("list = ", "scenarios", "{'rows': 1, 'cols': 1, 'scale': [2]}: values must be numbers, booleans or strings keyed by symbol"),
      ("quick = ", "scenarios.quick", NOT_QUICK)]),
    ("a key not a symbol", [(SC_LIST, 'list = [{ rows = 1, cols = 1, scale = 2.0, "a b" = 1 }]')],
     [("list = ", "scenarios", "{'rows': 1, 'cols': 1, 'scale': 2.0, 'a b': 1}: values must be numbers, booleans or strings keyed by symbol"),
      ("quick = ", "scenarios.quick", NOT_QUICK)]),
    ("a field the scenario lacks", [(SC_LIST, "list = [{ rows = 1, cols = 1 }]")],
     [('id = "r{', "scenarios.id", "'r{rows}_c{cols}_s{scale}' needs scale, which {'rows': 1, 'cols': 1} lacks"),
      ("quick = ", "scenarios.quick", NOT_QUICK)]),
    ("a duplicate id", [(SC_LIST, "list = [{ rows = 7, cols = 33, scale = 0.5 }]")],
     [("[[scenarios.product]]", "scenarios.id", "duplicate scenario id 'r7_c33_s0.5' ({'rows': 7, 'cols': 33, 'scale': 0.5} and "
       "{'rows': 7, 'cols': 33, 'scale': 0.5}): the template must tell them apart"), ("quick = ", "scenarios.quick", NOT_QUICK)]),
    ("an empty quick list", [('quick = ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]', "quick = []")],
     [("quick = []", "scenarios.quick", "a non-empty list of scenario ids (the quick subset)")]),
    ("no quick list", [('quick = ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]', "")],
     [("[scenarios]", "scenarios.quick", "a non-empty list of scenario ids (the quick subset)")]),
    ("a quick id of a number", [('quick = ["r1_c1_s2.0",', 'quick = [3, "r1_c1_s2.0",')],
     [("quick = [3", "scenarios.quick", "a non-empty list of scenario ids (the quick subset)")]),
    ("a quick id twice", [('quick = ["r1_c1_s2.0",', 'quick = ["r1_c1_s2.0", "r1_c1_s2.0",')],
     [("quick = ", "scenarios.quick", "an id is listed twice")]),
    ("an unknown quick id on its own line", [('quick = ["r1_c1_s2.0",', 'quick = ["r1_c1_s2.0",\n  "r9",\n')],
     [('"r9"', "scenarios.quick", "'r9' is not a scenario id")]),
    ("no flops", [('flops = "2*rows*cols"', "")], [("[formulas]", "formulas.flops", 'the useful operations of one call, e.g. "2*m*n*k"')]),
    ("an unknown formula", [('flops = "2*rows*cols"', 'flops = "2*rows*cols"\niops = 3')], [("iops = 3", "formulas.iops", "unknown field (known: flops, bytes)")]),
    ("a formula of a bool", [('bytes = "3*4*rows*cols"', "bytes = true")],
     [("bytes = true", "formulas.bytes", "expected a formula (a string or a number), got bool")]),
    ("a baseline not a table", [(BASELINES, 'numpy = "numpy_scale_add"')],
     [('numpy = "numpy_scale_add"', "baselines.numpy", 'expected a table: {function = "..."} or {kernel = "file"}'),
      ("default = [", "baselines.default", "'numpy' is not a baseline (known: )"),
      ('baseline = "numpy"', "tolerance.baseline", "'numpy' is not a function baseline (known: none)"),
      ('baseline = "numpy"\nspeedup', "goal.baseline", "'numpy' is not a baseline (known: )")]),
    ("a baseline's unknown field", [(BASELINES, 'numpy = { function = "numpy_scale_add", speed = 1, x = 2 }')],
     [("numpy = {", "baselines.numpy", "unknown field(s) speed, x")]),
    ("a baseline of both kinds", [(BASELINES, 'numpy = { function = "numpy_scale_add", kernel = "kernel.cpp" }')],
     [("numpy = {", "baselines.numpy", "give exactly one of function (in reference.py) or kernel (a source file)"),
      ("default = [", "baselines.default", "'numpy' is not a baseline (known: )"),
      ('baseline = "numpy"', "tolerance.baseline", "'numpy' is not a function baseline (known: none)"),
      ('baseline = "numpy"\nspeedup', "goal.baseline", "'numpy' is not a baseline (known: )")]),
    ("a baseline of neither kind", [(BASELINES, "numpy = { warm = true }")],
     [("numpy = {", "baselines.numpy", "give exactly one of function (in reference.py) or kernel (a source file)"),
      ("default = [", "baselines.default", "'numpy' is not a baseline (known: )"),
      ('baseline = "numpy"', "tolerance.baseline", "'numpy' is not a function baseline (known: none)"),
      ('baseline = "numpy"\nspeedup', "goal.baseline", "'numpy' is not a baseline (known: )")]),
    ("warm of a number", [(BASELINES, 'numpy = { function = "numpy_scale_add", warm = 1 }')], [("numpy = {", "baselines.numpy.warm", "true or false")]),
    ("a baseline function not a name", [(BASELINES, 'numpy = { function = "numpy scale" }')],
     [("numpy = {", "baselines.numpy.function", "'numpy scale' is not a function name"),
      ("default = [", "baselines.default", "'numpy' is not a baseline (known: )"),
      ('baseline = "numpy"', "tolerance.baseline", "'numpy' is not a function baseline (known: none)"),
      ('baseline = "numpy"\nspeedup', "goal.baseline", "'numpy' is not a baseline (known: )")]),
    ("a missing baseline kernel", [(BASELINES, BASELINES + '\nnaive = { kernel = "naive.cpp" }')],
     [('naive = { kernel = "naive.cpp" }\n\n[goal]', "baselines.naive.kernel", "naive.cpp: no such file (<folder>/naive.cpp)")]),
    ("defaults not a list", [('default = ["numpy"]', 'default = "numpy"')], [('default = "numpy"', "baselines.default", "a list of baseline names")]),
    ("a goal baseline the defaults leave out", [('default = ["numpy"]', "default = []")],
     [('baseline = "numpy"\nspeedup', "goal.baseline", "'numpy' is not among [baselines] default, which the agent loop's evaluations time: a goal they never time can never be met")]),
    ("a best_library goal whose libraries the defaults leave out",
     [(BASELINES, BASELINES.replace(" }", ", library = true }") + '\ntorch = { function = "numpy_scale_add", library = true }'),
      ('[goal]\nbaseline = "numpy"', '[goal]\nbaseline = "best_library"')],
     [('baseline = "best_library"', "goal.baseline", "'best_library' needs every library among [baselines] default (missing: 'torch'), which the agent loop's evaluations time: a goal they never time can never be met")]),
    ("defaults of numbers", [('default = ["numpy"]', "default = [1]")], [("default = [1]", "baselines.default", "a list of baseline names")]),
    ("a negative floor", [("floor = 1e-6", "floor = -1.0")], [("floor = -1.0", "tolerance.floor", "expected a number >= 0, got -1.0")]),
    ("a bool floor", [("floor = 1e-6", "floor = true")], [("floor = true", "tolerance.floor", "expected a number >= 0, got True")]),
    ("an infinite floor", [("floor = 1e-6", "floor = inf")], [("floor = inf", "tolerance.floor", "expected a number >= 0, got inf")]),
    ("a string factor", [("factor = 2.0", 'factor = "2"')],
     [('factor = "2"', "tolerance.factor", "expected a number >= 0, got '2'"), ('factor = "2"', "tolerance.factor", "below 1: the baseline itself would fail")]),
    ("a factor below one", [("factor = 2.0", "factor = 0.5")], [("factor = 0.5", "tolerance.factor", "below 1: the baseline itself would fail")]),
    ("a field of another rule", [("floor = 1e-6", "floor = 1e-6\nrel_l2 = 1.0")],
     [("rel_l2 = 1.0", "tolerance.rel_l2", "not used with this rule (its fields: baseline, ceiling, default_error, factor, floor, measure, sanity)")]),
    ("a kernel baseline's error", [('baseline = "numpy"\nfactor', 'baseline = "naive"\nfactor'),
                                   (BASELINES, BASELINES + '\nnaive = { kernel = "kernel.cpp" }')],
     [('baseline = "naive"', "tolerance.baseline", "'naive' is not a function baseline (known: numpy)")]),
    ("no tolerance rule", [(TOLERANCE, "")], [("[tolerance]", "tolerance", "give baseline (+ factor, floor), rel_l2, or atol/rtol")]),
    ("rel_l2 and more", [(TOLERANCE, "rel_l2 = 1e-3\natol = 1.0")], [("atol = 1.0", "tolerance.atol", "not used with this rule (its fields: rel_l2)")]),
    ("allclose and more", [(TOLERANCE, "atol = 1e-3\nfactor = 1.0")], [("factor = 1.0", "tolerance.factor", "not used with this rule (its fields: atol, rtol)")]),
    ("a negative rel_l2", [(TOLERANCE, "rel_l2 = -1.0")], [("rel_l2 = -1.0", "tolerance.rel_l2", "expected a number >= 0, got -1.0")]),
    ("a negative rtol", [(TOLERANCE, "rtol = -1.0")], [("rtol = -1.0", "tolerance.rtol", "expected a number >= 0, got -1.0")]),
    ("an unknown goal baseline", [('[goal]\nbaseline = "numpy"', '[goal]\nbaseline = "cublas"')],
     [('baseline = "cublas"', "goal.baseline", "'cublas' is not a baseline (known: numpy)")]),
    ("no goal", [('[goal]\nbaseline = "numpy"\nspeedup = 1.0', "[goal]")],
     [("[goal]", "goal.baseline", "None is not a baseline (known: numpy)"), ("[goal]", "goal.speedup", "expected a number > 0, got None")]),
    ("a bool speedup", [("speedup = 1.0", "speedup = true")], [("speedup = true", "goal.speedup", "expected a number > 0, got True")]),
    ("a zero speedup", [("speedup = 1.0", "speedup = 0")], [("speedup = 0", "goal.speedup", "expected a number > 0, got 0")]),
    ("an unknown timing key", [("[goal]", "[timing]\nturbo = 1\n\n[goal]")],
     [("turbo = 1", "timing.turbo", "unknown field (known: budget_ms, min_reps, max_reps, early_min, ci_rel, checks, batch_ms, batch_max)")]),
    ("a bool timing", [("[goal]", "[timing]\nchecks = true\n\n[goal]")], [("checks = true", "timing.checks", "True: must lie in [1, 3]")]),
    ("a string timing", [("[goal]", '[timing]\nbatch_ms = "5"\n\n[goal]')], [('batch_ms = "5"', "timing.batch_ms", "'5': must lie in [1, 500]")]),
    ("timing above its bound", [("[goal]", "[timing]\nmax_reps = 201\n\n[goal]")], [("max_reps = 201", "timing.max_reps", "201: must lie in [1, 200]")]),
    ("timing below its bound", [("[goal]", "[timing]\nci_rel = 0.0009\n\n[goal]")], [("ci_rel = 0.0009", "timing.ci_rel", "0.0009: must lie in [0.001, 0.05]")]),
    ("a call timeout below its bound", [("[goal]", "[call_timeout]\nbase_s = 0.5\n\n[goal]")], [("base_s = 0.5", "call_timeout.base_s", "0.5: must lie in [1, 600]")]),
    ("a host clock not a table", [("description = ", "host_clock = 3\ndescription = ")],
     [("host_clock = 3", "host_clock", "must be a table ([host_clock])")]),
    ("an unknown child field", [("[goal]", "[child]\nnice = 1\n\n[goal]")], [("nice = 1", "child.nice", "unknown field (known: env, baseline_threads)")]),
    ("a child env not a table", [("[goal]", "[child]\nenv = 3\n\n[goal]")], [("env = 3", "child.env", "a table of environment variables")]),
    ("child env names and values", [("[goal]", '[child.env]\nlower = "x"\nNUM = 3\n1X = "a"\n\n[goal]')],
     [('lower = "x"', "child.env.lower", "names are UPPER_CASE, values strings"), ("NUM = 3", "child.env.NUM", "names are UPPER_CASE, values strings"),
      ('1X = "a"', "child.env.1X", "names are UPPER_CASE, values strings")]),
    ("a child env of the harness", [("[goal]", '[child.env]\nPYTHONPATH = "x"\nKSEEK_X = "1"\nPATH = "/bin"\nCUDA_VISIBLE_DEVICES = "1"\n'
                                     'NVIDIA_X = "1"\n\n[goal]')],
     [('PYTHONPATH = "x"', "child.env.PYTHONPATH", "a task may not set this variable (the loader's or the harness's own)"),
      ('KSEEK_X = "1"', "child.env.KSEEK_X", "a task may not set this variable (the loader's or the harness's own)"),
      ('PATH = "/bin"', "child.env.PATH", "a task may not set this variable (the loader's or the harness's own)"),
      ('CUDA_VISIBLE', "child.env.CUDA_VISIBLE_DEVICES", "a task may not set this variable (the loader's or the harness's own)"),
      ('NVIDIA_X = "1"', "child.env.NVIDIA_X", "a task may not set this variable (the loader's or the harness's own)")]),
    ("a missing cheats folder", [("description = ", 'cheats = "nope"\ndescription = ')], [('cheats = "nope"', "cheats", "nope: no such folder")]),
    ("a symbol some scenarios lack", [(SC_LIST, "list = [{ rows = 1, cols = 1, scale = 2.0, extra = 1 }]"), ('value = "scale"', 'value = "scale * extra"')],
     [('value = "scale * extra"', "args.scale.value", "symbol 'extra' is not defined by scenario(s) r7_c33_s0.5, r7_c257_s0.5, r7_c1024_s0.5")]),
    ("a formula of a string", [(SC_LIST, 'list = [{ rows = 1, cols = 1, scale = "big" }]')],
     [("quick = ", "scenarios.quick", NOT_QUICK), ('value = "scale"', "args.scale.value", "'scale' on scenario r1_c1_sbig: 'big' is not a number")]),
    ("a formula that divides by zero", [('value = "scale"', 'value = "scale / (rows - 1)"')],
     [('value = "scale / (rows - 1)"', "args.scale.value", "'scale / (rows - 1)' on scenario r1_c1_s2.0: 'ZeroDivisionError: float division by zero' is not a number")]),
    ("an overflowing formula", [('flops = "2*rows*cols"', 'flops = "1e300 ** 2 * rows"')],
     [('flops = "1e300', "formulas.flops", "'1e300 ** 2 * rows' on scenario r1_c1_s2.0: \"OverflowError: (34, 'Numerical result out of range')\" is not a number >= 0")]),
    ("an infinite formula", [('flops = "2*rows*cols"', 'flops = "1e308 * 10 * rows"')],
     [('flops = "1e308', "formulas.flops", "'1e308 * 10 * rows' on scenario r1_c1_s2.0: inf is not a number >= 0")]),
    ("a float size", [(SC_LIST, "list = [{ rows = 1.5, cols = 1, scale = 2.0 }]")],
     [("quick = ", "scenarios.quick", NOT_QUICK),
      ('value = "rows"', "args.rows.value", "'rows' on scenario r1.5_c1_s2.0: 1.5 is not a whole number (int32)"),
      (None, "args.x.shape", "scenario r1.5_c1_s2.0: sizes must be integers >= 0, got [1.5, 1]"),
      (None, "args.y.shape", "scenario r1.5_c1_s2.0: sizes must be integers >= 0, got [1.5, 1]"),
      (None, "args.out.shape", "scenario r1.5_c1_s2.0: sizes must be integers >= 0, got [1.5, 1]")]),
]  # fmt: skip


@pytest.mark.parametrize("edits, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_bad_field_is_reported_exactly(folder, edits, want):
    want = [(p, f, m.replace("<folder>", str(folder.resolve()))) for p, f, m in want]
    expect(folder, *edits, want=want)


def test_a_negative_scalar_is_allowed(folder):
    edited(folder, ('value = "scale"', 'value = "-scale"'))
    assert load_spec(folder).scalars[0].value({"scale": 2.0}) == -2.0


def test_a_problem_names_its_file_and_line_and_all_are_said_at_once(folder):
    p = SpecProblem("/t/task.toml", "goal.speedup", "bad", 12)
    assert str(p) == "/t/task.toml:12: goal.speedup: bad"
    assert str(SpecProblem("/t/task.toml", "args", "none")) == "/t/task.toml: args: none"
    err = TaskSpecError([p, SpecProblem("/t/task.toml", "args", "none")])
    assert str(err) == "invalid task:\n  /t/task.toml:12: goal.speedup: bad\n  /t/task.toml: args: none"
    assert err.problems == [p, SpecProblem("/t/task.toml", "args", "none")]


def test_a_missing_or_unreadable_spec_is_one_problem(tmp_path, folder):
    with pytest.raises(TaskSpecError) as info:
        load_spec(tmp_path / "nowhere")
    (p,) = info.value.problems
    assert p.field == "task.toml" and p.message.startswith("cannot read it: ") and p.line is None
    assert p.file == str((tmp_path / "nowhere" / "task.toml").resolve())
    (folder / "task.toml").write_bytes(b'description = "\xff"\n')
    with pytest.raises(TaskSpecError, match="cannot read it: 'utf-8' codec"):
        load_spec(folder)
    (folder / "task.toml").write_text('description = "x"\ntarget = \n')
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    (p,) = info.value.problems
    assert p.line == 2 and p.message.startswith("not valid TOML: ")


def test_without_reference_py_the_spec_says_so(folder):
    (folder / "reference.py").unlink()
    expect(folder, want=[(None, "reference", f"reference.py is missing from {folder.resolve()}")])


def test_a_spec_without_arguments_says_none_were_given(folder):
    text = (folder / "task.toml").read_text()
    start, end = text.index("\n[[args]]"), text.index("\n[reference]")  # the headers, not a comment's words
    text = text[:start] + text[end:]
    (folder / "task.toml").write_text(text.replace("[kernel]", "args = []\n\n[kernel]"))
    got = problems_of(folder)
    assert got[0] == (None, "args", "the kernel's arguments, in order, as [[args]] tables: none given")
    assert not [f for _, f, _ in got if f.startswith("args.")]  # no argument was read


def test_an_argument_that_is_not_a_table_is_named_by_position(folder):
    text = (folder / "task.toml").read_text()
    start, end = text.index("\n[[args]]"), text.index("\n[reference]")  # the headers, not a comment's words
    args = 'args = [3, { name = "out", kind = "output", dtype = "float32", shape = [1], other = 1 }]\n\n'
    text = text[:start] + text[end:]
    (folder / "task.toml").write_text(text.replace("[kernel]", args + "[kernel]"))
    got = problems_of(folder)
    assert got[:2] == [
        (None, "args[0]", "must be a table"),
        (line_of(folder, "args = ["), "args.out.other", "unknown field"),
    ]


def test_an_unknown_kind_or_dtype_skips_the_argument(folder):
    got = problems_of(folder, ('kind = "output"', 'kind = "result"'), ('name = "x"\nkind = "input"\ndtype = "float32"',
                                                                         'name = "x"\nkind = "input"\ndtype = "float8"'))  # fmt: skip
    assert got == [
        (line_of(folder, 'dtype = "float8"'), "args.x.dtype", "unknown dtype 'float8' (known: float32, float64, float16, "
         "bfloat16, int8, uint8, int32, int64)"),
        (line_of(folder, 'kind = "result"'), "args.out.kind", "'result': expected input, output or scalar"),
        (None, "args", "no argument is an output: there would be nothing to judge"),
    ]  # fmt: skip


# ---- what a good spec holds ----


def test_a_good_spec_holds_every_field(folder):
    (folder / "cheats").mkdir()
    edited(folder, ('function = "reference"  #', 'function = "reference"\nprecision = "float32"  #'),
           (BASELINES, 'numpy = { function = "numpy_scale_add", warm = true }\nnaive = { kernel = "kernel.cpp" }'),
           ("[goal]", '[timing]\nbatch_ms = 20\nmin_reps = 4\n\n[host_clock]\nhost_ratio = 1.25\n\n'
            '[call_timeout]\nbase_s = 5\nmin_rate = 2e9\n\n[child.env]\nOMP_PROC_BIND = "true"\n\n[goal]'),
           ("speedup = 1.0", "speedup = 2"))  # fmt: skip
    spec = load_spec(folder)
    assert spec.name == "demo_op" and spec.folder == folder.resolve() and spec.target.name == "cpu"
    assert spec.description == "out[r, c] = x[r, c] * scale + y[r, c], float32, row-major"
    assert spec.symbol == "kseek_demo_op" and spec.starting_kernel == folder.resolve() / "kernel.cpp"
    assert [a.name for a in spec.inputs] == ["x", "y"] and [a.name for a in spec.outputs] == ["out"]
    assert [a.name for a in spec.scalars] == ["scale", "rows", "cols"]
    x, y = spec.inputs
    assert (x.init.dist, x.init.a, x.init.b) == ("normal", 0.0, 1.0) and (y.init.dist, y.init.a, y.init.b) == (
        "uniform",
        -1.0,
        1.0,
    )
    assert x.shape == ("rows", "cols") and spec.outputs[0].init is None
    assert (spec.reference_function, spec.reference_precision) == ("reference", "float32")
    assert spec.reference_path == folder.resolve() / "reference.py"
    assert spec.quick_ids == ("r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5")
    assert spec.scenarios[0].id == "r1_c1_s2.0" and spec.scenarios[0].params == {"rows": 1, "cols": 1, "scale": 2.0}
    assert [s.id for s in spec.scenarios[1:4]] == ["r7_c33_s0.5", "r7_c257_s0.5", "r7_c1024_s0.5"]
    assert spec.tolerance == Tolerance("baseline", baseline="numpy", factor=2.0, floor=1e-6, default_error=1e-6)
    assert spec.baselines == {"numpy": Baseline("numpy", function="numpy_scale_add", warm=True),
                              "naive": Baseline("naive", kernel=folder.resolve() / "kernel.cpp")}  # fmt: skip
    assert spec.default_baselines == ("numpy",)
    assert spec.flops.text == "2*rows*cols" and spec.bytes({"rows": 2, "cols": 3}) == 72
    assert (spec.goal_baseline, spec.goal_speedup) == ("numpy", 2.0) and type(spec.goal_speedup) is float
    assert spec.timing == {"batch_ms": 20.0, "min_reps": 4} and type(spec.timing["batch_ms"]) is float
    assert type(spec.timing["min_reps"]) is int and spec.host_clock == {"host_ratio": 1.25}
    assert (spec.call_timeout_base_s, spec.call_timeout_min_rate) == (5.0, 2e9)
    assert spec.child_env == {"OMP_PROC_BIND": "true"} and spec.cheats == folder.resolve() / "cheats"


def test_the_defaults_of_a_spec(folder):
    edited(folder, ('default = ["numpy"]\n', ""), (BASELINES, BASELINES + '\nnaive = { kernel = "kernel.cpp" }'),
           ('bytes = "3*4*rows*cols"', ""), ("[reference]\n", "[references]\n"))  # fmt: skip
    with pytest.raises(TaskSpecError):
        load_spec(folder)
    edited(folder, ("[references]\n", "[reference]\n"), ('function = "reference"  #', "#"))
    spec = load_spec(folder)
    assert spec.default_baselines == ("numpy", "naive")  # every baseline, in the order written
    assert spec.bytes is None and spec.timing == {} and spec.host_clock == {} and spec.child_env == {}
    assert (spec.call_timeout_base_s, spec.call_timeout_min_rate) == (20.0, 1e9)
    assert (spec.reference_function, spec.reference_precision) == ("reference", "float64")
    assert spec.cheats is None and spec.baselines["numpy"].warm is False


def test_a_cheats_folder_may_be_named(folder):
    (folder / "tricks").mkdir()
    edited(folder, ("description = ", 'cheats = "tricks"\ndescription = '))
    assert load_spec(folder).cheats == folder.resolve() / "tricks"


def test_tolerance_rules_keep_their_numbers(folder):
    edited(folder, (TOLERANCE, "atol = 1e-3\nrtol = 2"))
    assert load_spec(folder).tolerance == Tolerance("allclose", atol=1e-3, rtol=2.0)
    edited(folder, ("atol = 1e-3\nrtol = 2", "rtol = 0.5"))
    assert load_spec(folder).tolerance == Tolerance("allclose", atol=0.0, rtol=0.5)
    edited(folder, ("rtol = 0.5", "atol = 0.5"))
    assert load_spec(folder).tolerance == Tolerance("allclose", atol=0.5, rtol=0.0)
    edited(folder, ("atol = 0.5", "rel_l2 = 1e-4"))
    assert load_spec(folder).tolerance == Tolerance("rel_l2", rel_l2=1e-4)
    edited(folder, ("rel_l2 = 1e-4", 'baseline = "numpy"\nfactor = 1\ndefault_error = 0.5'))
    assert load_spec(folder).tolerance == Tolerance(
        "baseline", baseline="numpy", factor=1.0, floor=0.0, default_error=0.5
    )
    edited(folder, ("factor = 1\n", ""))
    assert load_spec(folder).tolerance.factor == 2.0


def test_timing_bounds_are_inclusive(folder):
    edited(folder, ("[goal]", "[timing]\nchecks = 3\nci_rel = 0.001\nbatch_max = 10000\nearly_min = 3\n\n[host_clock]\n"
                    "host_overhead_ms = 0\nbatch_latency_ms = 50\n\n[call_timeout]\nmin_rate = 1e15\n\n[goal]"))  # fmt: skip
    spec = load_spec(folder)
    assert spec.timing == {"checks": 3, "ci_rel": 0.001, "batch_max": 10000, "early_min": 3}
    assert spec.host_clock == {"host_overhead_ms": 0.0, "batch_latency_ms": 50.0}
    assert spec.call_timeout_min_rate == 1e15


def test_inputs_of_each_distribution(folder):
    edited(folder, (X_INIT, 'init = { dist = "normal", mean = 1, std = 3 }'), ("low = -1.0, high = 1.0", "low = -2"),
           ('name = "out"', 'name = "idx"\nkind = "input"\ndtype = "int64"\nshape = ["rows"]\n'
            'init = { dist = "integers", low = 0, high = 9 }\n\n[[args]]\nname = "ids"\nkind = "input"\ndtype = "int8"\n'
            'shape = ["rows"]\ninit = { function = "make_ids" }\n\n[[args]]\nname = "out"'))  # fmt: skip
    x, y, idx, ids = load_spec(folder).inputs
    assert (x.init.dist, x.init.a, x.init.b) == ("normal", 1.0, 3.0) and type(x.init.a) is float
    assert (y.init.a, y.init.b) == (-2.0, 1.0)
    assert (idx.init.dist, idx.init.a, idx.init.b) == ("integers", 0.0, 9.0)
    assert (ids.init.dist, ids.init.function) == ("function", "make_ids") and ids.shape == ("rows",)


def test_a_product_may_be_one_table(folder):
    text = (folder / "task.toml").read_text()
    product = "[[scenarios.product]]\nrows = [7, 128, 1000]\ncols = [33, 257, 1024]\nscale = [0.5]"
    assert product in text
    text = text.replace(product, "").replace(
        SC_LIST, SC_LIST + "\nproduct = { rows = [7, 1000], cols = [33, 257], scale = [0.5] }"
    )
    (folder / "task.toml").write_text(text)
    assert [s.id for s in load_spec(folder).scenarios] == ["r1_c1_s2.0", "r7_c33_s0.5", "r7_c257_s0.5", "r1000_c33_s0.5",
                                                          "r1000_c257_s0.5"]  # fmt: skip


def test_the_second_product_reports_its_own_line(folder):
    product = "[[scenarios.product]]\nrows = [7, 128, 1000]\ncols = [33, 257, 1024]\nscale = [0.5]"
    edited(folder, (product, product + "\n\n[[scenarios.product]]\nrows = []\ncols = [1]\nscale = [1.0]"))
    got = problems_of(folder)
    text = (folder / "task.toml").read_text()
    second = text[: text.index("[[scenarios.product]]\nrows = []")].count("\n") + 1
    assert got == [(second, "scenarios.product[1]", "each axis is a non-empty list of values")]


def test_smallest_scenario_and_shapes(folder):
    spec = load_spec(folder)
    assert spec.smallest_scenario().id == "r1_c1_s2.0"
    edited(folder, (SC_LIST, "list = [{ rows = 2000, cols = 2000, scale = 2.0 }]"),
           ('quick = ["r1_c1_s2.0",', 'quick = ['))  # fmt: skip
    spec = load_spec(folder)
    assert spec.smallest_scenario().id == "r7_c33_s0.5"
    out = Arg("out", "output", "float32", shape=("rows", 4))
    assert spec.shape(out, {"rows": 3.0}) == (3, 4) and type(spec.shape(out, {"rows": 3.0})[0]) is int


def test_the_abi_declares_each_kind(folder):
    edited(folder, ('name = "rows"\nkind = "scalar"\ndtype = "int32"', 'name = "rows"\nkind = "scalar"\ndtype = "int64"'),
           ('name = "scale"\nkind = "scalar"\ndtype = "float32"', 'name = "scale"\nkind = "scalar"\ndtype = "float64"'))  # fmt: skip
    assert load_spec(folder).abi() == (
        'extern "C" int kseek_demo_op(const float* x, const float* y, float* out, double scale, int64_t rows, int cols);'
    )
    assert Arg("h", "output", "float16").c_declaration() == "__half* h"
    assert Arg("b", "input", "bfloat16").c_declaration() == "const __nv_bfloat16* b"


def test_descriptions_of_tolerances_and_baselines(tmp_path):
    assert (
        Tolerance("baseline", baseline="numpy", factor=2.5, floor=1e-7).describe() == "2.5 x numpy's own error + 1e-07"
    )
    assert Tolerance("rel_l2", rel_l2=1e-5).describe() == "relative L2 error <= 1e-05"
    assert (
        Tolerance("allclose", atol=0.001, rtol=0.25).describe()
        == "|out - ref| <= 0.001 + 0.25 x |ref|, element by element"
    )
    assert Baseline("numpy", function="f").describe(tmp_path) == "numpy (reference.py:f)"
    assert Baseline("naive", kernel=tmp_path / "k" / "naive.cpp").describe(tmp_path) == "naive (kernel k/naive.cpp)"
    outside = tmp_path.parent / "elsewhere.cpp"
    assert Baseline("far", kernel=outside).describe(tmp_path) == f"far (kernel {os.path.join('..', 'elsewhere.cpp')})"
    assert _relative(None, tmp_path) == "-"


def test_a_tables_keys_include_its_sub_tables_but_not_the_next_table():
    lines = _Lines("[child]\nx = 1\n[child.env]\nB = 2\n[children]\nC = 3\n")
    assert lines.key("B", 1) == 4 and lines.key("C", 1) == 1 and lines.key("C", 5) == 6 and lines.key("C") == 6


def test_lines_are_found_for_headers_keys_and_text():
    lines = _Lines('a = 1\n[t]  # c\nb = 2\n[[arr]]\nx.b = 3\n[[ arr ]]\nc = { b = 4 }\n# b = 5\nq = ["u"]\n')
    assert lines.header("t") == 2 and lines.header("arr") == 4 and lines.header("arr", 1) == 6
    assert lines.header("arr", 2) is None and lines.header("missing") is None
    assert lines.key("b") == 3 and lines.key("b", 6) == 7 and lines.key("b", 3) == 3
    assert lines.key("b", 4) == 4  # a table's search ends at the next table: b of the second [[arr]] is not the first's
    assert lines.key("b", 8) == 8 and lines.key("zz") is None and lines.key("zz", None) is None
    assert lines.key("b", containing="{") == 7
    assert lines.key("a") == 1  # the first line counts
    assert lines.containing('"u"') == 9 and lines.containing('"u"', 9) == 9
    assert lines.containing("nowhere", 5) == 5 and lines.containing("nowhere") is None
    assert lines.containing("a = 1") == 1
    repeated = _Lines("x\nfind\nx\nfind\nx\n")
    assert (
        repeated.containing("find", 3) == 4 and repeated.containing("find", 4) == 4 and repeated.containing("find") == 2
    )


# ---- formulas ----


@pytest.mark.parametrize(
    "text, value",
    [("7 - 2", 5), ("7 // 2", 3), ("7 / 2", 3.5), ("+m", 3), ("min(5, m, 4)", 3), ("max(m, n)", 4), ("2 ** 64", 2**64),
     ("2 ** -64", 2.0**-64), (" m ", 3), (3, 3), (2.5, 2.5)],
)  # fmt: skip
def test_each_operator_computes(text, value):
    f = parse_formula(text)
    assert f({"m": 3, "n": 4}) == value
    assert f.text == str(text)


def test_a_formula_names_its_symbols():
    assert parse_formula("2*m*n + max(k, 1) - m").symbols == frozenset({"m", "n", "k"})
    assert parse_formula("3").symbols == frozenset()


@pytest.mark.parametrize("text", ["2 ** 65", "2 ** -65"])
def test_an_exponent_beyond_64_is_refused_when_computed(text):
    f = parse_formula(text)
    with pytest.raises(ValueError, match=r"^exponent -?65 is too large$"):
        f({})


@pytest.mark.parametrize(
    "text, message",
    [(True, "expected a formula (a string or a number), got bool"), (None, "expected a formula (a string or a number), got NoneType"),
     ("m +", "'m +' does not parse: invalid syntax"), ("True", "'True': 'True' is not allowed (a formula may use numbers, scenario "
      "symbols, + - * / // ** ( ) and min()/max())"),
     ("min()", "'min()': 'min()' is not allowed (a formula may use numbers, scenario symbols, + - * / // ** ( ) and min()/max())"),
     ("~m", "'~m': '~m' is not allowed (a formula may use numbers, scenario symbols, + - * / // ** ( ) and min()/max())"),
     (" m % 2", "' m % 2': 'm % 2' is not allowed (a formula may use numbers, scenario symbols, + - * / // ** ( ) and min()/max())"),
     ("m.f(1)", "'m.f(1)': 'm.f(1)' is not allowed (a formula may use numbers, scenario symbols, + - * / // ** ( ) and min()/max())"),
     ("'s'", "\"'s'\": \"'s'\" is not allowed (a formula may use numbers, scenario symbols, + - * / // ** ( ) and min()/max())")],
)  # fmt: skip
def test_a_refused_formula_says_exactly_why(text, message):
    with pytest.raises(FormulaError) as info:
        parse_formula(text)
    assert str(info.value) == message


def test_a_negative_count_is_refused_but_zero_is_not(folder):
    edited(folder, ('bytes = "3*4*rows*cols"', 'bytes = "rows - rows"'))
    assert load_spec(folder).bytes({"rows": 1}) == 0
    assert not math.isnan(load_spec(folder).flops({"rows": 1, "cols": 1}))


def test_a_toml_error_without_a_line_has_none(folder):
    (folder / "task.toml").write_text('description = "x"\ntarget = ')
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    (p,) = info.value.problems
    assert p.line is None and p.message.startswith("not valid TOML: ") and "end of document" in p.message


def test_a_spec_without_a_description_has_an_empty_one(folder):
    edited(folder, ('description = "out[r, c] = x[r, c] * scale + y[r, c], float32, row-major"\n', ""))
    assert load_spec(folder).description == ""


def test_a_kernel_of_another_targets_language_is_named_at_its_line(folder):
    expect(folder, ('target = "cpu"', 'target = "cuda-sm90"'),
           want=[('starting = "kernel.cpp"', "kernel.starting", "kernel.cpp: a cuda-sm90 kernel is a .cu file")])  # fmt: skip


def test_an_arguments_unknown_field_is_found_in_its_own_table(folder):
    # `symbol =` is also the [kernel] table's key, earlier in the file: the line named is the argument's
    expect(folder, ('[[args]]\nname = "rows"', '[[args]]\nname = "rows"\nsymbol = 3'),
           want=[("symbol = 3", "args.rows.symbol", "unknown field")])  # fmt: skip


def test_the_default_ranges_of_normal_and_uniform_inputs(folder):
    edited(folder, (X_INIT, 'init = { dist = "normal" }'), ("low = -1.0, high = 1.0", "high = 2.0"))
    x, y = load_spec(folder).inputs
    assert (x.init.a, x.init.b) == (0.0, 1.0) and (y.init.a, y.init.b) == (0.0, 2.0)
    edited(folder, ("high = 2.0", "low = 0.5"))
    assert load_spec(folder).inputs[1].init.b == 1.0


def test_a_normal_input_may_have_a_mean_above_its_std(folder):
    edited(folder, (X_INIT, 'init = { dist = "normal", mean = 5.0, std = 1.0 }'))
    assert load_spec(folder).inputs[0].init.a == 5.0


def test_an_inverted_range_names_both_bounds(folder):
    expect(folder, ("low = -1.0, high = 1.0", "low = 2.0, high = 1.0"),
           want=[("low = 2.0", "args.y.init", "an empty range: low = 2, high = 1")])  # fmt: skip


def test_the_references_problems_are_found_in_its_own_table(folder):
    # x's init also sets a `function`, earlier in the file: the line named is [reference]'s
    expect(folder, (X_INIT, 'init = { function = "make_x" }'), ('function = "reference"  #', 'function = "2x"  #'),
           want=[('function = "2x"', "reference.function", "'2x' is not a function name")])  # fmt: skip


def test_an_unknown_reference_precision_says_which_are_known(folder):
    expect(folder, ('function = "reference"  #', 'function = "reference"\nprecision = "float8"  #'),
           want=[('precision = "float8"', "reference.precision", "'float8': expected one of float64, float32")])  # fmt: skip


def test_a_product_that_is_not_a_table_of_axes_is_a_problem_not_a_crash(folder):
    product = "[[scenarios.product]]\nrows = [7, 128, 1000]\ncols = [33, 257, 1024]\nscale = [0.5]"
    expect(folder, (product, ""), (SC_LIST, SC_LIST + "\nproduct = [3]"),
           want=[("list = ", "scenarios.product[0]", "each axis is a non-empty list of values"),
                 ("quick = ", "scenarios.quick", "'r7_c33_s0.5' is not a scenario id"),
                 ("quick = ", "scenarios.quick", "'r1000_c257_s0.5' is not a scenario id")])  # fmt: skip


def test_list_problems_name_every_missing_and_known_name(folder):
    expect(folder, (SC_LIST, "list = [{ rows = 1 }]"), ('default = ["numpy"]', 'default = ["numpy", "cublas"]'),
           (BASELINES, BASELINES + '\nnaive = { kernel = "kernel.cpp" }'), ('flops = "2*rows*cols"', 'flops = "2*rows*cols"\nname = 1'),
           want=[('id = "r{', "scenarios.id", "'r{rows}_c{cols}_s{scale}' needs cols, scale, which {'rows': 1} lacks"),
                 ("quick = ", "scenarios.quick", NOT_QUICK),
                 ("name = 1", "formulas.name", "unknown field (known: flops, bytes)"),
                 ('default = ["numpy", "cublas"]', "baselines.default", "'cublas' is not a baseline (known: numpy, naive)")])  # fmt: skip


def test_an_unknown_goal_baseline_lists_every_known_one(folder):
    expect(folder, (BASELINES, BASELINES + '\nnaive = { kernel = "kernel.cpp" }'), ('[goal]\nbaseline = "numpy"', '[goal]\nbaseline = "x"'),
           want=[('baseline = "x"', "goal.baseline", "'x' is not a baseline (known: numpy, naive)")])  # fmt: skip


def test_problems_of_a_later_table_name_its_own_line_not_an_earlier_same_named_key(folder):
    out_shape = OUT + 'shape = ["rows", "cols"]'
    expect(folder, (out_shape, OUT + 'shape = ["rows", "colz"]'), ("[goal]", '[child]\nname = 1\nenv = { shape = "x" }\n\n[goal]'),
           want=[("name = 1", "child.name", "unknown field (known: env, baseline_threads)"),
                 ('env = { shape = "x" }', "child.env.shape", "names are UPPER_CASE, values strings"),
                 ('shape = ["rows", "colz"]', "args.out.shape", "symbol 'colz' is defined by no scenario")])  # fmt: skip


def test_a_bad_size_lists_the_shapes_numbers_as_written(folder):
    x_shape = 'name = "x"\nkind = "input"\ndtype = "float32"\nshape = ["rows", "cols"]'
    got = problems_of(
        folder, (x_shape, x_shape.replace('"cols"]', "4]")), (SC_LIST, "list = [{ rows = 1.5, cols = 1, scale = 2.0 }]")
    )
    assert (None, "args.x.shape", "scenario r1.5_c1_s2.0: sizes must be integers >= 0, got [1.5, 4]") in got


def test_a_refused_piece_inside_min_is_named():
    with pytest.raises(FormulaError, match=r"^'min\(m % 2, 1\)': 'm % 2' is not allowed"):
        parse_formula("min(m % 2, 1)")


def test_a_size_of_zero_is_allowed(folder):
    edited(
        folder,
        (SC_LIST, "list = [{ rows = 1, cols = 0, scale = 2.0 }]"),
        ('quick = ["r1_c1_s2.0",', 'quick = ["r1_c0_s2.0",'),
    )
    assert load_spec(folder).scenarios[0].params["cols"] == 0
