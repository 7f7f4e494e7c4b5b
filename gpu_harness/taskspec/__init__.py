"""A task as data: read `tasks/<name>/task.toml`, check it, and hold it in frozen dataclasses.

This package only parses and validates (standard library only: tomllib, ast, string); running a task's
reference and judging a candidate is gpu_harness/tasks/data_task.py's job. Every problem found is reported
with the file, the field and, where the text shows it, the line, all at once (`TaskSpecError`), so that a
task author fixes a spec in one pass. docs/tasks.md describes the format field by field.

`reader.py` reads the sections in turn, each with its own module (`kernel`, `args` and `input_init`, `judging`,
`scenarios`, `symbols`, `baselines`, `tolerance`, `child`); `spec.py` holds what they build, `vocabulary.py` and
`formula.py` the words they read. The names below are the ones the rest of the code imports.
"""

from .formula import FORMULA_MAX_BITS, FORMULA_MAX_CHARS, FORMULA_MAX_DEPTH, FormulaError, parse_formula
from .problems import SpecProblem, TaskSpecError
from .reader import load_spec
from .spec import Arg, Baseline, ByScenario, JudgeAhead, SpotCheck, TaskSpec, Tolerance
from .vocabulary import (
    C_RESERVED,
    DTYPES,
    MAX_SCENARIO_BYTES,
    MAX_SCENARIOS,
    NAME_RE,
    REFERENCE_FILE,
    SPEC_FILE,
    TARGETS,
    reserved_by,
)

__all__ = [
    "C_RESERVED",
    "reserved_by",
    "DTYPES",
    "FORMULA_MAX_BITS",
    "FORMULA_MAX_CHARS",
    "FORMULA_MAX_DEPTH",
    "MAX_SCENARIOS",
    "MAX_SCENARIO_BYTES",
    "NAME_RE",
    "REFERENCE_FILE",
    "SPEC_FILE",
    "TARGETS",
    "Arg",
    "Baseline",
    "ByScenario",
    "FormulaError",
    "JudgeAhead",
    "SpecProblem",
    "SpotCheck",
    "TaskSpec",
    "TaskSpecError",
    "Tolerance",
    "load_spec",
    "parse_formula",
]
