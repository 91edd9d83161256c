"""calculator: safe arithmetic by walking an allowlisted Python AST (never eval).

It also takes clock times and dates, so durations have a tool to be right with: a clock
time (``14:05``, ``2:05 pm``) stands for its minutes since midnight and a date
(``2026-03-10``) for its day number, so ``17:50 - 14:05`` is 225 (minutes) and
``2026-12-25 - 2026-03-10`` is 290 (days). A difference of two clock times that comes out
negative is taken to cross midnight (``01:30 - 22:10`` is 200); a plain difference comes
with its unit and, for minutes, as hours and minutes; a date plus or minus whole days is a
date (``2026-03-10 + 45`` is 2026-04-24). One expression holds clock times or dates, not
both. A clock time is a point in the day, not a number: it can only be taken from another
clock time. ``20:00 + 12`` would be 1212, which reads as neither a time nor a duration,
so it is refused; the difference of two clock times is minutes and takes any arithmetic
(``(17:50 - 14:05) / 60`` is 3.75 hours). A clock time plus or minus a duration that says
its unit is a clock time (``20:00 + 12 h`` is 08:00, one day later:
`gateway.tools.clock_shift`).
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from bus import written_times
from gateway.errors import InvalidArgument
from gateway.ports import EgressClient
from gateway.spec import Risk, ToolSpec
from gateway.tools.clock_shift import shifted

Number = int | float

MAX_EXPRESSION_CHARS = 500
MAX_NODES = 200
# Results (and every intermediate value) stay below 10**MAX_DIGITS, so no step can burn
# CPU or memory on a huge integer: 9**9**9 is refused before it is computed.
MAX_DIGITS = 300
MAX_EXPONENT = 10_000

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: operator.mod,
    ast.Pow: lambda a, b: a**b,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    # name: (function, min args, max args)
    "sqrt": (math.sqrt, 1, 1),
    "abs": (abs, 1, 1),
    "round": (round, 1, 2),
    "min": (min, 1, 20),
    "max": (max, 1, 20),
    "sum": (lambda *values: sum(values), 1, 20),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "log": (math.log, 1, 2),
    "log10": (math.log10, 1, 1),
    "exp": (math.exp, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
}
_OF_A_LIST = {"sum", "min", "max"}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}
_DATE_SHIFT = re.compile(r"^\s*(\d{6})\s*([+-])\s*\d+\s*$")
_TWO_TIMES = re.compile(r"^\s*\(?\s*\d+(?:\.\d+)?\s*\)?\s*-\s*\(?\s*\d+(?:\.\d+)?\s*\)?\s*$")


# A currency beside a number ("85 EUR * 4", "€85 * 4"): small models write them, and the
# arithmetic is the same without them. One currency per expression; the model knows which.
_CURRENCY_CODES = "EUR|USD|GBP|CHF|JPY|CAD|AUD|CNY|INR|BRL|SEK|NOK|DKK|PLN"
_CURRENCY_SYMBOLS = {"€": "EUR", "$": "USD", "£": "GBP", "¥": "JPY"}
_MONEY = re.compile(
    rf"(?:(?P<pre>\b(?:{_CURRENCY_CODES})|[€$£¥])\s*)?(?P<number>\d+(?:\.\d+)?)"
    rf"(?:\s*(?P<post>(?:{_CURRENCY_CODES})\b|[€$£¥]))?"
)


def without_currency(expression: str) -> str:
    """The expression with the currency beside each amount taken out.

    Raises:
        InvalidArgument: amounts in two currencies (no rate is known here).
    """
    if "'" in expression or '"' in expression:
        return expression  # a quoted string is measured as written (len('EUR 5') is 5)
    seen: set[str] = set()

    def bare(match: re.Match[str]) -> str:
        currency = match["pre"] or match["post"]
        if currency is not None:
            seen.add(_CURRENCY_SYMBOLS.get(currency, currency))
        return match["number"] if currency is not None else match[0]

    plain = _MONEY.sub(bare, expression)
    if len(seen) > 1:
        raise InvalidArgument(f"the expression mixes currencies ({', '.join(sorted(seen))})")
    return plain


def _day_number(match: re.Match[str]) -> str:
    day = written_times.iso_date(match)
    if day is None:
        raise InvalidArgument(f"{match.group(0)} is not a date")
    return str(day.toordinal())


def _minutes(match: re.Match[str]) -> str:
    total = written_times.clock_minutes(match)
    if total is None:
        raise InvalidArgument(f"{match.group(0).strip()} is not a clock time")
    return str(int(total) if total == int(total) else total)


def _clock_name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) and node.id.startswith("_clock") else None


def _clocks_in_pairs(expression: str) -> None:
    """Refuse a clock time that is not one side of a clock time minus a clock time.

    Raises:
        InvalidArgument: a clock time with a plain number (``20:00 + 12``) or on its own.
    """
    clocks = [m.group(0).strip() for m in written_times.CLOCK.finditer(expression)]
    if not clocks:
        return
    names = iter(range(len(clocks)))
    marked = written_times.CLOCK.sub(lambda _: f" _clock{next(names)} ", expression)
    try:
        tree = ast.parse(marked.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # evaluate() says what is wrong with the syntax
    paired: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            left, right = _clock_name(node.left), _clock_name(node.right)
            if left and right:
                paired |= {left, right}
    alone = sorted(
        int(name.removeprefix("_clock"))
        for node in ast.walk(tree)
        if (name := _clock_name(node)) is not None and name not in paired
    )
    if alone:
        raise InvalidArgument(
            f"{clocks[alone[0]]} is a clock time: the calculator "
            "only takes a clock time minus another clock time ('17:50 - 14:05' gives 225 "
            "minutes; '(17:50 - 14:05) / 60' gives hours) or a clock time plus a duration "
            "with its unit ('20:00 + 12 h' gives 08:00 the next day), not a clock time with "
            "a plain number or on its own"
        )


def with_units(expression: str) -> tuple[str, str | None]:
    """The expression with its dates and clock times as numbers, and the result's unit.

    Raises:
        InvalidArgument: a malformed date or time, dates and times in one expression, or a
            clock time that is not taken from another (``20:00 + 12``).
    """
    dated = written_times.ISO_DATE.sub(_day_number, expression)
    timed = written_times.CLOCK.sub(_minutes, dated)
    if dated != expression and timed != dated:
        raise InvalidArgument("an expression holds clock times or dates, not both")
    _clocks_in_pairs(dated)
    if dated != expression:
        return dated, "days"
    if timed != dated:
        return timed, "minutes"
    return expression, None


def duration_text(minutes: Number) -> str:
    """Minutes as hours and minutes: 225 is "3 h 45 min"."""
    sign, left = ("-" if minutes < 0 else ""), abs(minutes)
    hours, rest = divmod(left, 60)
    rest = round(rest, 2)
    rest_text = str(int(rest)) if rest == int(rest) else str(rest)
    return f"{sign}{int(hours)} h {rest_text} min" if hours else f"{sign}{rest_text} min"


def _checked(value: Any) -> Number:
    if isinstance(value, complex):
        raise InvalidArgument("the result is a complex number, which is not supported")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidArgument("the result is infinite or not a number")
    if abs(value) >= 10**MAX_DIGITS:
        raise InvalidArgument(f"a value exceeds the limit of {MAX_DIGITS} digits")
    return value


def _small_int(value: Number) -> bool:
    return isinstance(value, int) and abs(value) <= 100


def _power(base: Number, exponent: Number) -> Number:
    if abs(exponent) > MAX_EXPONENT:
        raise InvalidArgument(f"exponents are limited to ±{MAX_EXPONENT}")
    if abs(base) > 1 and exponent > 0:
        # Estimate the size first: computing it would be the denial of service.
        digits = exponent * math.log10(abs(base))
        if digits >= MAX_DIGITS:
            raise InvalidArgument(f"the result would exceed {MAX_DIGITS} digits")
    return base**exponent


class _Evaluator:
    """Evaluates one parsed expression, refusing any node outside the allowlist."""

    def __init__(self) -> None:
        self._nodes = 0

    def eval(self, node: ast.AST) -> Number:
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise InvalidArgument(f"the expression is too complex (over {MAX_NODES} parts)")
        if isinstance(node, ast.Expression):
            return self.eval(node.body)
        if isinstance(node, ast.Constant):
            # bool is an int subclass; True + True is not arithmetic the model meant.
            if type(node.value) not in (int, float):
                raise InvalidArgument(f"unsupported constant {node.value!r}; only numbers")
            return _checked(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = self.eval(node.left), self.eval(node.right)
            if isinstance(node.op, ast.Pow):
                return _checked(_power(left, right))
            return _checked(_BINARY[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _checked(_UNARY[type(node.op)](self.eval(node.operand)))
        if isinstance(node, ast.Name):
            if node.id not in _CONSTANTS:
                known = ", ".join(sorted(_CONSTANTS))
                raise InvalidArgument(f"unknown name {node.id!r}; the constants are {known}")
            return _CONSTANTS[node.id]
        if isinstance(node, ast.Call):
            return self._call(node)
        raise InvalidArgument(f"unsupported syntax: {type(node).__name__}")

    def _call(self, node: ast.Call) -> Number:
        if isinstance(node.func, ast.Name) and node.func.id == "len":
            return _length(node)
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            names = ", ".join(sorted(_FUNCTIONS))
            raise InvalidArgument(f"unsupported function; available: {names}")
        if node.keywords:
            raise InvalidArgument("keyword arguments are not supported")
        func, low, high = _FUNCTIONS[node.func.id]
        arguments = list(node.args)
        if node.func.id in _OF_A_LIST and len(arguments) == 1:
            only = arguments[0]
            if isinstance(only, ast.List | ast.Tuple):  # sum([3, 5, 7]), as Python writes it
                arguments = list(only.elts)
        if not low <= len(arguments) <= high:
            raise InvalidArgument(f"{node.func.id} takes {low} to {high} arguments")
        args = [self.eval(a) for a in arguments]
        if node.func.id == "round" and len(args) == 2 and not _small_int(args[1]):
            raise InvalidArgument("round's second argument must be an integer in ±100")
        return _checked(func(*args))


def _length(node: ast.Call) -> int:
    """``len`` of a string literal or a list, as Python gives it (``len('agentbus')`` is 8)."""
    if len(node.args) != 1 or node.keywords:
        raise InvalidArgument("len takes one argument")
    only = node.args[0]
    if isinstance(only, ast.Constant) and isinstance(only.value, str):
        return len(only.value)
    if isinstance(only, ast.List | ast.Tuple):
        return len(only.elts)
    raise InvalidArgument("len takes a quoted string or a list")


def evaluate(expression: str) -> Number:
    """The value of an arithmetic expression.

    Raises:
        InvalidArgument: bad syntax, a disallowed construct, division by zero, or a value
            beyond the size limits.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise InvalidArgument(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise InvalidArgument("the expression is not valid arithmetic syntax") from e
    try:
        return _Evaluator().eval(tree)
    except ZeroDivisionError as e:
        raise InvalidArgument("division by zero") from e
    except (OverflowError, ValueError) as e:
        raise InvalidArgument(f"the expression cannot be computed: {e}") from e
    except RecursionError as e:
        raise InvalidArgument("the expression is nested too deeply") from e


class Calculator:
    """Evaluates arithmetic: + - * / // % **, parentheses, and a few math functions."""

    spec = ToolSpec(
        name="calculator",
        description=(
            "Evaluate an arithmetic expression exactly. Supports + - * / // % ** and "
            "parentheses, the constants pi, e, tau, and the functions "
            + ", ".join(sorted(_FUNCTIONS))
            + ", and len of a quoted string or a list"
            + ". Example: 'sqrt(2) * (3 + 4) ** 2'. Durations: a clock time minus a clock time "
            "gives minutes ('17:50 - 14:05' gives 225 minutes; a clock time with a plain "
            "number is refused), a clock time plus a duration with its unit gives a clock "
            "time ('20:00 + 12 h' gives 08:00, +1 day; '22:10 + 3 h 20 min' gives 01:30), and "
            "a date is its day number ('2026-12-25 - 2026-03-10' gives 290 days; "
            "'2026-03-10 + 45' gives 2026-04-24)."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "expression": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_EXPRESSION_CHARS,
                    "description": "The arithmetic expression, e.g. '23 * 19' or '17:50 - 14:05'.",
                }
            },
            "required": ["expression"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "expression": {"type": "string"},
                "result": {"type": "number"},
                "unit": {"enum": ["minutes", "days", "date", "time"]},
                "text": {"type": "string"},
                "days": {"type": "integer", "description": "Days a clock time moved by."},
            },
            "required": ["expression", "result"],
            "additionalProperties": False,
        },
        risk=Risk.LOW,
        timeout_s=2.0,
        max_output_bytes=4_096,
    )

    async def run(self, args: dict[str, Any], net: EgressClient | None) -> dict[str, Any]:
        """Evaluate ``args["expression"]`` (with its clock times or dates, if any)."""
        expression = args["expression"]
        moved = shifted(expression)
        if moved is not None:
            return moved
        arithmetic, unit = with_units(without_currency(expression))
        result = evaluate(arithmetic)
        # Only a plain difference is a duration; (17:50 - 14:05) / 60 is hours, unlabelled.
        shift = len(written_times.ISO_DATE.findall(expression)) == 1 and _DATE_SHIFT.match(
            arithmetic
        )
        if not shift:
            unit = unit if _TWO_TIMES.match(arithmetic) else None
        if unit == "days" and shift and isinstance(result, int):
            day = dt.date.fromordinal(result)  # a date plus or minus whole days is a date
            return {"expression": expression, "result": result, "unit": "date", "text": str(day)}
        if unit == "minutes" and result < 0:
            result += 24 * 60  # a later time minus an earlier one across midnight
        out: dict[str, Any] = {"expression": expression, "result": result}
        if unit == "minutes":
            out |= {"unit": unit, "text": duration_text(result)}
        elif unit == "days":
            out |= {"unit": unit, "text": f"{result} days"}
        return out
