"""What the task spec loader (gpu_harness/taskspec.py) refuses that it once let through (docs/tasks.md, "task.toml,
field by field" and its limits): a typo of a field in [kernel], [scenarios] or [goal]; an argument named like a
Python or C keyword; a scalar its C type cannot hold; integer inputs' bounds that are not whole or do not fit the
dtype; text where a formula needs a number; a task too large to run (scenarios, a scenario's tensors, a
formula's size). Each problem names the file, the field and the line."""

import pytest

from gpu_harness.taskscaffold import scaffold
from gpu_harness.taskspec import (
    FORMULA_MAX_CHARS,
    MAX_SCENARIOS,
    FormulaError,
    TaskSpecError,
    load_spec,
    parse_formula,
)

from .conftest import edit_task_folder


@pytest.fixture
def folder(tmp_path):
    return scaffold("demo_op", tmp_path)


def problems(folder, *edits):
    """(line, field, message) of every problem after the edits."""
    edit_task_folder(folder, *edits)
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    for p in info.value.problems:
        assert p.file == str(folder.resolve() / "task.toml")
    return [(p.line, p.field, p.message) for p in info.value.problems]


def line_of(folder, piece):
    text = (folder / "task.toml").read_text()
    assert piece in text, piece
    return text[: text.index(piece)].count("\n") + 1


@pytest.mark.parametrize(
    "old, new, fieldname",
    [
        ('symbol = "kseek_demo_op"', 'symbol = "kseek_demo_op"\nstarts = "kernel.cpp"', "kernel.starts"),
        ('quick = ["', 'quik = ["r1_c1_s2.0"]\nquick = ["', "scenarios.quik"),
        ("speedup = 1.0", "speedup = 1.0\nspeed_up = 2.0", "goal.speed_up"),
    ],
)
def test_an_unknown_field_of_kernel_scenarios_or_goal_is_named_at_its_line(folder, old, new, fieldname):
    got = problems(folder, (old, new))
    key = fieldname.split(".")[1]
    assert [(line, f) for line, f, _ in got] == [(line_of(folder, f"{key} = "), fieldname)]
    assert got[0][2].startswith("unknown field (its fields: ")


@pytest.mark.parametrize(
    "name, lang",
    [
        ("lambda", "Python"),
        ("class", "Python"),
        ("int", "C/C++"),
        ("half", "C/C++"),
        # C++ keywords Python allows, and type names of the generated declarations: once let through, their
        # declaration (`const float* true`, `double nullptr`) did not compile
        ("true", "C/C++"),
        ("nullptr", "C/C++"),
        ("and_eq", "C/C++"),
        ("uint32_t", "C/C++"),
        ("cudaStream_t", "C/C++"),
    ],
)
def test_an_argument_named_like_a_keyword_is_refused(folder, name, lang):
    got = problems(folder, ('name = "y"', f'name = "{name}"'))
    assert got[0] == (
        line_of(folder, f'name = "{name}"'),
        f"args.{name}.name",
        f"{name!r} is a {lang} keyword or type name: the kernel and reference.py's functions take the arguments by"
        " name",
    )


def test_a_kernel_symbol_that_is_a_c_keyword_is_refused(folder):
    got = problems(folder, ('symbol = "kseek_demo_op"', 'symbol = "switch"'))
    assert got == [(line_of(folder, 'symbol = "switch"'), "kernel.symbol", "'switch' is not a C identifier")]


@pytest.mark.parametrize(
    "value, dtype, says",
    [
        ('"rows * 2**31"', "int32", "2147483648 does not fit in int32"),
        ('"-rows * 2**31 - 1"', "int32", "-2147483649 does not fit in int32"),
        ('"rows * 2**63"', "int64", "9223372036854775808 does not fit in int64"),
        ('"rows / 2"', "int32", "0.5 is not a whole number (int32)"),
    ],
)
def test_an_integer_scalar_its_c_type_cannot_hold_is_refused(folder, value, dtype, says):
    old = 'dtype = "int32"\nvalue = "rows"'
    got = problems(folder, (old, f'dtype = "{dtype}"\nvalue = {value}'))
    formula = value.strip('"')
    assert got == [
        (line_of(folder, f"value = {value}"), "args.rows.value", f"{formula!r} on scenario r1_c1_s2.0: {says}")
    ]


def test_the_largest_integer_scalars_and_whole_floats_pass(folder):
    edit_task_folder(
        folder, ('dtype = "int32"\nvalue = "rows"', 'dtype = "int64"\nvalue = "2**62 - 1 + 2**62 + 0 * rows"')
    )
    edit_task_folder(folder, ('dtype = "int32"\nvalue = "cols"', 'dtype = "int32"\nvalue = "cols * 2.0"'))
    spec = load_spec(folder)
    rows, cols = spec.scalars[1], spec.scalars[2]
    assert rows.value({"rows": 1}) == 2**63 - 1 and cols.value({"cols": 3}) == 6.0


def test_a_float32_scalar_beyond_float32_is_refused(folder):
    got = problems(folder, ('value = "scale"', 'value = "scale * 2e38"'))
    assert got == [
        (
            line_of(folder, 'value = "scale * 2e38"'),
            "args.scale.value",
            "'scale * 2e38' on scenario r1_c1_s2.0: 4e+38 does not fit in float32 (at most 3.402823e+38)",
        )
    ]


def _integer_input(folder, init, dtype="int8"):
    edit_task_folder(
        folder,
        ('dtype = "float32"\nshape = ["rows", "cols"]\ninit = { dist = "uniform", low = -1.0, high = 1.0 }',
         f'dtype = "{dtype}"\nshape = ["rows", "cols"]\ninit = {init}'),
    )  # fmt: skip
    return folder


@pytest.mark.parametrize(
    "init, dtype, says",
    [
        ('{ dist = "integers", low = 0.5, high = 10 }', "int8", "low = 0.5, high = 10: integers' bounds are whole numbers"),
        ('{ dist = "integers", low = 0, high = 9.5 }', "int8", "low = 0, high = 9.5: integers' bounds are whole numbers"),
        ('{ dist = "integers", low = 0, high = 129 }', "int8", "[0, 129) does not fit in int8 ([-128, 128) does)"),
        ('{ dist = "integers", low = -1, high = 10 }', "uint8", "[-1, 10) does not fit in uint8 ([0, 256) does)"),
        ('{ dist = "integers", low = 0, high = 3e9 }', "int32", "[0, 3000000000) does not fit in int32 ([-2147483648, 2147483648) does)"),
    ],
)  # fmt: skip
def test_integer_bounds_are_whole_and_fit_the_dtype(folder, init, dtype, says):
    _integer_input(folder, init, dtype)
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    got = [(p.line, p.field, p.message) for p in info.value.problems]
    assert got == [(line_of(folder, f"init = {init}"), "args.y.init", says)]


def test_integer_bounds_at_the_dtypes_ends_pass_and_stay_exact(folder):
    _integer_input(folder, '{ dist = "integers", low = -128, high = 128 }')
    init = load_spec(folder).inputs[1].init
    assert (init.a, init.b) == (-128, 128)
    big = scaffold("big_op", folder.parent)
    _integer_input(big, '{ dist = "integers", low = 4611686018427387904, high = 4611686018427387905 }', "int64")
    init = load_spec(big).inputs[1].init
    assert (init.a, init.b) == (2**62, 2**62 + 1) and type(init.a) is int  # a float would make it empty


@pytest.mark.parametrize(
    "init, says",
    [
        ('{ dist = "uniform", low = -1.0, high = 4e38 }', "[-1, 4e+38) reaches 4e+38, beyond float32's largest finite value 3.40282e+38"),
        ('{ dist = "normal", mean = 0.0, std = 5e37 }', "mean 0 + 8 std of 5e+37 reaches 4e+38, beyond float32's largest finite value 3.40282e+38"),
    ],
)  # fmt: skip
def test_a_float_init_whose_draws_overflow_the_dtype_is_refused(folder, init, says):
    # the input would hold inf before any kernel ran, and every candidate would be judged against that
    edit_task_folder(folder, ('init = { dist = "uniform", low = -1.0, high = 1.0 }', f"init = {init}"))
    with pytest.raises(TaskSpecError) as info:
        load_spec(folder)
    got = [(p.line, p.field, p.message) for p in info.value.problems]
    assert got == [(line_of(folder, f"init = {init}"), "args.y.init", says)]


def test_a_float_init_within_the_dtype_passes(folder):
    edit_task_folder(folder, ('init = { dist = "uniform", low = -1.0, high = 1.0 }', 'init = { dist = "normal", mean = 1e37, std = 1e37 }'))  # fmt: skip
    assert load_spec(folder).inputs[1].init.a == 1e37


def test_text_where_a_formula_needs_a_number_is_refused_not_repeated(folder):
    # "bf16" * 10**9 would be a 4 GB string: a symbol's value in a formula is a number, or the formula fails
    got = problems(
        folder,
        ("list = [{ rows = 1, cols = 1, scale = 2.0 }]", 'list = [{ rows = 1, cols = 1, scale = 2.0, tag = "bf16" }]'),
        ('id = "r{rows}_c{cols}_s{scale}"', 'id = "r{rows}_c{cols}_s{scale}{tag}"'),
        ('flops = "2*rows*cols"', 'flops = "tag * 10**9"'),
    )
    flops = (
        line_of(folder, "flops = "),
        "formulas.flops",
        "'tag * 10**9' on scenario r1_c1_s2.0bf16: 'bf16' is not a number >= 0",
    )
    assert flops in got  # fmt: skip
    with pytest.raises(TypeError, match="symbol 'tag' is 'bf16', not a number"):
        parse_formula("tag * 2")({"tag": "bf16"})
    assert parse_formula("causal * 3 + n")({"causal": True, "n": 1}) == 4  # a boolean counts 1 (attention's flops)


def test_a_derived_symbol_of_text_says_the_text(folder):
    got = problems(
        folder,
        ("[formulas]", '[scenarios.derived]\ndouble = "scale * 2"\n\n[formulas]'),
        ("list = [{ rows = 1, cols = 1, scale = 2.0 }]", 'list = [{ rows = 1, cols = 1, scale = "x" }]'),
    )
    assert (
        line_of(folder, 'double = "scale * 2"'),
        "scenarios.derived.double",
        "'scale * 2' on {'rows': 1, 'cols': 1, 'scale': 'x'}: 'x' is not a number",
    ) in got


def test_too_many_scenarios_are_refused_before_they_are_made(folder):
    axes = "rows = [7, 128, 1000]\ncols = [33, 257, 1024]"
    big = "rows = " + str(list(range(1, 1001))) + "\ncols = " + str(list(range(1, 1001))) + "\nextra = [1, 2, 3]"
    got = problems(folder, (axes, big))  # a billion scenarios: refused at once, not built
    assert (line_of(folder, "[[scenarios.product]]"), "scenarios.product[0]", f"3000001 scenarios with this product: at most {MAX_SCENARIOS}") in got  # fmt: skip


def test_exactly_the_most_scenarios_pass(folder):
    rows = "rows = " + str(list(range(1, 101)))
    cols = "cols = " + str(list(range(1, 101)))
    edit_task_folder(folder, ("rows = [7, 128, 1000]\ncols = [33, 257, 1024]", f"{rows}\n{cols}"))
    edit_task_folder(folder, ('quick = ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]', 'quick = ["r1_c1_s2.0"]'))
    edit_task_folder(folder, ("list = [{ rows = 1, cols = 1, scale = 2.0 }]", "list = []"))
    edit_task_folder(folder, ('quick = ["r1_c1_s2.0"]', 'quick = ["r1_c1_s0.5"]'))
    assert len(load_spec(folder).scenarios) == MAX_SCENARIOS
    edit_task_folder(folder, ("list = []", "list = [{ rows = 1, cols = 1, scale = 2.0 }]"))
    got = problems(folder)
    assert got[0][1:] == ("scenarios.product[0]", f"10001 scenarios with this product: at most {MAX_SCENARIOS}")


def test_a_scenario_whose_tensors_exceed_128_gib_is_refused(folder):
    # x, y, out: 3 x 4 bytes x rows x cols; 2**33 elements each = 96 GiB (passes), 2**34 = 192 GiB (refused)
    got = problems(
        folder,
        ("list = [{ rows = 1, cols = 1, scale = 2.0 }]",
         "list = [{ rows = 1, cols = 1, scale = 2.0 }, { rows = 131072, cols = 65536, scale = 2.0 },"
         " { rows = 131072, cols = 131072, scale = 2.0 }, { rows = 262144, cols = 131072, scale = 2.0 }]"),
    )  # fmt: skip
    assert got == [
        (
            line_of(folder, "[scenarios]"),
            "scenarios",
            "scenario r131072_c131072_s2.0: its tensors take 192 GiB, more than a scenario's 128 GiB (and 1 more"
            " scenario(s))",
        )
    ]


def test_a_mapped_dtype_counts_the_scenarios_choice(folder):
    # x is float32 (scenario a) or float64 (b): 12 or 16 bytes an element with y and out, 10 x 2**30 elements
    big = "rows = 163840, cols = 65536, scale = 2.0"
    got = problems(
        folder,
        ("list = [{ rows = 1, cols = 1, scale = 2.0 }]",
         f'list = [{{ rows = 1, cols = 1, scale = 2.0, p = "a" }}, {{ {big}, p = "a" }}, {{ {big}, p = "b" }}]'),
        ('id = "r{rows}_c{cols}_s{scale}"', 'id = "r{rows}_c{cols}_s{scale}{p}"'),
        ('quick = ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]', 'quick = ["r1_c1_s2.0a"]'),
        ("[[scenarios.product]]\nrows = [7, 128, 1000]\ncols = [33, 257, 1024]\nscale = [0.5]\n", ""),
        ('name = "x"\nkind = "input"\ndtype = "float32"', 'name = "x"\nkind = "input"\ndtype = { by = "p", a = "float32", b = "float64" }'),
    )  # fmt: skip
    assert got == [
        (line_of(folder, "[scenarios]"), "scenarios",
         "scenario r163840_c65536_s2.0b: its tensors take 160 GiB, more than a scenario's 128 GiB"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text, says",
    [
        ("+".join(["m"] * 600), f"is 1199 characters long: at most {FORMULA_MAX_CHARS}"),
        ("+".join(["m"] * 200), "nests too deep (at most 100 levels)"),
        ("-" * 500 + "1", "nests too deep (at most 100 levels)"),
        ("((2**64)**64)**64", "ValueError"),
    ],
)
def test_a_formula_too_large_to_compute_is_refused_not_a_crash(text, says):
    if says == "ValueError":  # parsed, refused when computed (its power's magnitude): a spec's problem, not a hang
        with pytest.raises(ValueError, match="is too large"):
            parse_formula(text)({})
        return
    with pytest.raises(FormulaError, match=says.replace("(", r"\(").replace(")", r"\)")):
        parse_formula(text)


def test_a_formula_within_the_limits_computes():
    assert parse_formula("+".join(["m"] * 90))({"m": 2}) == 180
    assert parse_formula("(2**64)**16")({}) == 2**1024
    with pytest.raises(ValueError, match=r"18446744073709551616\*\*17 is too large"):
        parse_formula("(2**64)**17")({})


def test_id_names_of_a_symbol_no_scenario_has_is_a_typo(folder):
    got = problems(folder, ('id = "r{rows}', 'id_names = { col = { 1 = "one" } }\nid = "r{rows}'))
    assert got == [
        (line_of(folder, "id_names = "), "scenarios.id_names", "col: no scenario symbol (known: rows, cols, scale)")
    ]
    edit_task_folder(folder, ("col = {", "cols = {"))  # the symbol itself: its values are then checked
    said = [m for _, _, m in problems(folder)]
    assert "{'rows': 7, 'cols': 33, 'scale': 0.5}: no name for cols = 33" in said
    assert not any("no scenario symbol" in m for m in said)


def test_a_timing_count_is_a_whole_number(folder):
    got = problems(folder, ("[goal]", "[timing]\nmin_reps = 5.5\nbatch_ms = 20.5\n\n[goal]"))
    assert got == [(line_of(folder, "min_reps = 5.5"), "timing.min_reps", "5.5: a whole number in [1, 100]")]
    edit_task_folder(folder, ("min_reps = 5.5", "min_reps = 5.0"))
    assert load_spec(folder).timing == {"min_reps": 5, "batch_ms": 20.5}


@pytest.mark.parametrize(
    "table, key, says",
    [
        ("min_reps = 20\nmax_reps = 10", "min_reps = 20", "min_reps (20) is more than max_reps (10;"),
        ("max_reps = 2", "max_reps = 2", "min_reps (3) is more than max_reps (2;"),  # the default minimum: 3
        ("min_reps = 40", "min_reps = 40", "min_reps (40) is more than max_reps (15;"),  # the default maximum: 15
    ],
)
def test_more_repeats_at_least_than_at_most_is_refused(folder, table, key, says):
    """The harness would take the minimum's count, so the maximum the task set would be ignored unsaid."""
    [(line, name, text)] = problems(folder, ("[goal]", f"[timing]\n{table}\n\n[goal]"))
    assert line == line_of(folder, key) and name == f"timing.{key.split()[0]}" and text.startswith(says), text


def test_repeats_within_each_other_pass(folder):
    edit_task_folder(folder, ("[goal]", "[timing]\nmin_reps = 15\nmax_reps = 15\n\n[goal]"))
    assert load_spec(folder).timing == {"min_reps": 15, "max_reps": 15}


def test_a_description_is_text(folder):
    got = problems(folder, ('description = "out', 'description = 3\nxdescription = "out'))
    assert (line_of(folder, "description = 3"), "description", "one line of text") in got
