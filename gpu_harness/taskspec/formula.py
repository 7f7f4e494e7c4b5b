"""Formulas: arithmetic on scenario symbols ("2*m*n*k"), parsed with ast and never eval'd, bounded in size so that
a spec cannot stall the loader (docs/tasks.md, "Formulas")."""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

# a formula's value: a number (an int where every operand is one)
Number = int | float
# a compiled piece of a formula: params -> its value
Compiled = Callable[[dict[str, Any]], Number]

_BINOPS: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Pow: lambda a, b: _power(a, b),
}


def _power(a: Number, b: Number) -> Number:
    if abs(b) > 64:  # a spec's formula counts operations; "9**9**9" would only stall the loader
        raise ValueError(f"exponent {b} is too large")
    # "((9**64)**64)**64...": the same (integers; a float's power overflows on its own)
    if isinstance(a, int) and isinstance(b, int) and abs(a) > 1 and abs(b) * math.log2(abs(a)) > FORMULA_MAX_BITS:
        raise ValueError(f"{a!r}**{b!r} is too large")
    return a**b


class SymbolValueError(TypeError):
    """A formula's symbol whose scenario value is no number (`value`: what it is)."""

    def __init__(self, name: str, value: object) -> None:
        self.value = value
        super().__init__(f"symbol {name!r} is {value!r}, not a number")


def _symbol_value(params: dict[str, Any], name: str) -> Number:
    """A symbol's value as a formula uses it: a number (a boolean counts 1 or 0), never text ("bf16"*2)."""
    value = params[name]
    if not isinstance(value, (int, float)):
        raise SymbolValueError(name, value)
    return value


_FUNCS = {"min": min, "max": max}
FORMULA_HELP = "numbers, scenario symbols, + - * / // ** ( ) and min()/max()"
# a formula's size: its text, how deep it nests (each operator and call a level, as Python's syntax tree has
# them: a sum of n terms is n - 1 deep; parentheses alone add none), the magnitude of a power; a formula
# counts the operations of one call, and these bound the loader's time on it
FORMULA_MAX_CHARS = 1000
FORMULA_MAX_DEPTH = 100
FORMULA_MAX_BITS = 1024


@dataclass(frozen=True, eq=False)
class Formula:
    """An arithmetic expression of scenario symbols, e.g. "2*m*n*k"."""

    text: str
    symbols: frozenset[str]
    _fn: Callable[[dict[str, Any]], float] = field(repr=False, compare=False)

    def __call__(self, params: dict[str, Any]) -> float:
        return self._fn(params)


class FormulaError(ValueError):
    pass


def parse_formula(text: object) -> Formula:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise FormulaError(f"expected a formula (a string or a number), got {type(text).__name__}")
    src = str(text)
    if len(src) > FORMULA_MAX_CHARS:
        raise FormulaError(f"{src[:40]!r}... is {len(src)} characters long: at most {FORMULA_MAX_CHARS}")
    try:
        tree = ast.parse(src.strip(), mode="eval")
    except SyntaxError as e:
        raise FormulaError(f"{src!r} does not parse: {e.msg}") from None
    except (RecursionError, MemoryError):
        raise FormulaError(f"{src[:40]!r}... nests too deep (at most {FORMULA_MAX_DEPTH} levels)") from None
    symbols: set[str] = set()
    fn = _compile(tree.body, src, symbols)
    return Formula(src, frozenset(symbols), fn)


def _compile(node: ast.expr, src: str, symbols: set[Any], depth: int = 0) -> Compiled:
    """The node as a closure over params (a tree of small functions: fast to call, nothing eval'd)."""
    if depth > FORMULA_MAX_DEPTH:
        raise FormulaError(f"{src[:40]!r}... nests too deep (at most {FORMULA_MAX_DEPTH} levels)")
    depth += 1
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = cast(Number, node.value)  # (an int or a float: checked just above)
        return lambda p: value
    if isinstance(node, ast.Name):
        name = node.id
        symbols.add(name)
        return lambda p: _symbol_value(p, name)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        op = _BINOPS[type(node.op)]
        left, right = _compile(node.left, src, symbols, depth), _compile(node.right, src, symbols, depth)
        return lambda p: op(left(p), right(p))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner, sign = _compile(node.operand, src, symbols, depth), -1 if isinstance(node.op, ast.USub) else 1
        return lambda p: sign * inner(p)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and node.args
        and not node.keywords
    ):
        f, args = _FUNCS[node.func.id], [_compile(a, src, symbols, depth) for a in node.args]
        return lambda p: f(*(a(p) for a in args))
    piece = ast.get_source_segment(src.strip(), node) or type(node).__name__
    raise FormulaError(f"{src!r}: {piece!r} is not allowed (a formula may use {FORMULA_HELP})")
