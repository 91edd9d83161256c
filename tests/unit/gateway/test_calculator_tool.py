"""calculator: arithmetic by AST walking, with refusals for anything else."""

from __future__ import annotations

import math

import pytest

from bus.commands import ToolCallRequest
from gateway.call_context import CallContext, CallPolicy, GatewayDeps
from gateway.chain import invoke
from gateway.errors import InvalidArgument
from gateway.registry import ToolRegistry
from gateway.tools.calculator import Calculator, evaluate


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("23 * 19", 437),
        ("sum([3, 5, 7]) * 2", 30),
        ("max((2, 9, 4))", 9),
        ("sum(1, 2)", 3),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("2 ** 10", 1024),
        ("-2 ** 2", -4),
        ("+-3", -3),
        ("sqrt(16) + abs(-3)", 7.0),
        ("round(2.567, 2)", 2.57),
        ("min(4, 2, 8) + max(1, 9)", 11),
        ("2 * pi", 2 * math.pi),
        ("2 ** -1", 0.5),
        ("1_000 * 3", 3000),
        ("10 ** 299", 10**299),
        ("len('agentbus')", 8),
        ('len("") + len([3, 5, 7]) * 2', 6),
    ],
)
def test_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("9**9**9", "exponents are limited"),
        ("10 ** 400", "exceed 300 digits"),
        ("2 ** 5000", "exceed 300 digits"),
        ("10**299 * 10**299", "300 digits"),
        ("1" * 301, "300 digits"),
        ("1e999", "infinite"),
        ("1e200 * 1e200", "infinite"),
        ("1e308 * 10", "300 digits"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("(-8) ** 0.5", "complex"),
        ("sqrt(-1)", "cannot be computed"),
        ("__import__('os').system('id')", "unsupported function"),
        ("open('/etc/passwd')", "unsupported function"),
        ("(1).__class__", "unsupported syntax: Attribute"),
        ("[1, 2][0]", "unsupported syntax"),
        ("lambda: 1", "unsupported syntax: Lambda"),
        ("x + 1", "unknown name 'x'"),
        ("True + 1", "only numbers"),
        ("'a' * 3", "only numbers"),
        ("1 << 2", "unsupported syntax: BinOp"),
        ("1 if 1 else 2", "unsupported syntax: IfExp"),
        ("len(5)", "len takes a quoted string or a list"),
        ("len('a', 'b')", "len takes one argument"),
        ("round(1.5, ndigits=1)", "keyword arguments"),
        ("round(1.5, 1000)", "round's second argument"),
        ("sqrt()", "takes 1 to 1 arguments"),
        ("1 +", "not valid arithmetic syntax"),
        ("import os", "not valid arithmetic syntax"),
        ("+".join(["1"] * 150), "too complex"),
        ("(" * 240 + "1" + ")" * 240, "not valid arithmetic syntax"),
        ("(" * 300 + "1" + ")" * 300, "longer than 500"),
    ],
)
def test_refusals(expression: str, reason: str) -> None:
    with pytest.raises(InvalidArgument, match=reason.replace("(", r"\(")):
        evaluate(expression)


async def test_through_the_chain() -> None:
    ctx = CallContext(
        tenant_id="t",
        subject="s",
        run_id="r",
        agent="researcher",
        policy=CallPolicy(),
        deps=GatewayDeps(registry=ToolRegistry([Calculator()])),
    )

    def calc(expression: str) -> ToolCallRequest:
        return ToolCallRequest(call_id="1", name="calculator", arguments={"expression": expression})

    ok, _ = await invoke(calc("23*19"), ctx)
    assert ok.result == {"expression": "23*19", "result": 437}
    bad, _ = await invoke(calc("9**9**9"), ctx)
    assert (bad.code, bad.status.value) == ("invalid_argument", "error")
    assert "exponents" in bad.message
    long, _ = await invoke(calc("1+" * 300 + "1"), ctx)
    assert long.code == "schema_invalid" and "expression: must be at most 500" in long.message


@pytest.mark.parametrize(
    ("expression", "result", "unit", "text"),
    [
        ("17:50 - 14:05", 225, "minutes", "3 h 45 min"),
        ("01:30 - 22:10", 200, "minutes", "3 h 20 min"),  # overnight
        ("2:05 pm - 9:30 am", 275, "minutes", "4 h 35 min"),
        ("10:15 - 10:00", 15, "minutes", "15 min"),
        ("2026-12-25 - 2026-03-10", 290, "days", "290 days"),
        ("2024-03-01 - 2024-02-01", 29, "days", "29 days"),  # a leap year
        ("(17:50 - 14:05) / 60", 3.75, None, None),  # hours: no unit is claimed
        ("2026-03-10 + 45", 739730, "date", "2026-04-24"),
        ("2026-03-10 - 10", 739675, "date", "2026-02-28"),
    ],
)
async def test_durations_between_clock_times_and_dates(
    expression: str, result: float, unit: str | None, text: str | None
) -> None:
    ctx = CallContext(
        tenant_id="t",
        subject="s",
        run_id="r",
        agent="researcher",
        policy=CallPolicy(),
        deps=GatewayDeps(registry=ToolRegistry([Calculator()])),
    )
    call = ToolCallRequest(call_id="1", name="calculator", arguments={"expression": expression})
    out, _ = await invoke(call, ctx)
    assert out.status == "ok", out.message
    assert out.result["result"] == result
    assert out.result.get("unit") == unit
    assert out.result.get("text") == text


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("25:00 - 1:00", "not a clock time"),
        ("13:00 pm - 1:00 pm", "not a clock time"),
        ("2026-02-30 - 2026-02-01", "not a date"),
        ("2026-03-10 - 14:05", "not both"),
    ],
)
async def test_malformed_times_and_dates_are_refused(expression: str, reason: str) -> None:
    with pytest.raises(InvalidArgument, match=reason):
        await Calculator().run({"expression": expression}, None)


@pytest.mark.parametrize(
    "expression", ["20:00 + 12", "12 + 20:00", "14:05 * 2", "14:05", "14:05 + 3:45", "9:30 am + 45"]
)
async def test_a_clock_time_with_a_plain_number_is_refused_saying_what_is_allowed(
    expression: str,
) -> None:
    ctx = CallContext(
        tenant_id="t",
        subject="s",
        run_id="r",
        agent="researcher",
        policy=CallPolicy(),
        deps=GatewayDeps(registry=ToolRegistry([Calculator()])),
    )
    call = ToolCallRequest(call_id="1", name="calculator", arguments={"expression": expression})
    out, _ = await invoke(call, ctx)
    # 20:00 + 12 used to be 1212: minutes since midnight plus 12, which reads as neither.
    assert (out.status, out.code) == ("error", "invalid_argument"), out.result
    assert "is a clock time" in out.message
    assert "clock time minus another clock time ('17:50 - 14:05' gives 225" in out.message
    assert "'20:00 + 12 h' gives 08:00 the next day" in out.message


@pytest.mark.parametrize(
    ("expression", "minutes", "text", "days"),
    [
        ("20:00 + 12 h", 480, "08:00 (+1 day)", 1),
        ("20:00 + 12h", 480, "08:00 (+1 day)", 1),
        ("8:00 pm + 12 hours", 480, "08:00 (+1 day)", 1),
        ("22:10 + 3 h 20 min", 90, "01:30 (+1 day)", 1),
        ("09:40 + 95 minutes", 675, "11:15", 0),
        ("09:00 - 45 min", 495, "08:15", 0),
        ("00:30 - 1 h", 1410, "23:30 (-1 day)", -1),
        ("20:00 + 50 h", 1320, "22:00 (+2 days)", 2),
    ],
)
async def test_a_clock_time_plus_a_duration_with_its_unit_is_a_clock_time(
    expression: str, minutes: int, text: str, days: int
) -> None:
    # An arrival time: the clock time the duration leads to, and how many days later.
    out = await Calculator().run({"expression": expression}, None)
    assert out == {
        "expression": expression, "result": minutes, "unit": "time", "text": text, "days": days
    }  # fmt: skip


@pytest.mark.parametrize(
    ("expression", "result"),
    [("(17:50 - 14:05) + (12:00 - 11:30)", 255), ("17:50 - 14:05 - 15", 210)],
)
async def test_a_difference_of_clock_times_takes_any_arithmetic(
    expression: str, result: int
) -> None:
    out = await Calculator().run({"expression": expression}, None)
    assert out == {"expression": expression, "result": result}


@pytest.mark.parametrize(
    ("expression", "result"),
    [("62 EUR * 5", 310), ("€62 * 5", 310), ("5 * 62EUR", 310), ("(62 EUR + 48 EUR) * 2", 220)],
)
async def test_an_amount_may_carry_its_currency(expression: str, result: int) -> None:
    out = await Calculator().run({"expression": expression}, None)
    assert out == {"expression": expression, "result": result}


async def test_amounts_in_two_currencies_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="mixes currencies"):
        await Calculator().run({"expression": "10 EUR + 5 USD"}, None)


async def test_a_quoted_string_keeps_its_currency() -> None:
    out = await Calculator().run({"expression": "len('EUR 5')"}, None)
    assert out["result"] == 5
