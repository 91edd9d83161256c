"""`agentbus eval answers`: the scoring, the shipped question file, and the model choice."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from agentbus_evals.answer_set import (
    AnswerSet,
    Expect,
    Outcome,
    in_half,
    in_turns,
    is_correct,
    load_set,
    numbers_in,
    score,
    summary,
)
from agentbus_evals.draft_scores import JudgedDraft
from agents.errors import ModelNotInstalled
from agents.llm.local import LocalLLM
from agents.llm.observed import ObservedLLM
from agents.llm.weights import LOCAL_MODELS, QWEN25_CODER_15B, WeightsSpec, locate_parts
from agents.settings import AgentSettings
from api.compose.roles import make_llm
from gateway.tools import builtin_tools
from gateway.tools.calculator import Calculator
from gateway.tools.search_docs import SearchDocs

# --- scoring --------------------------------------------------------------------------


def test_numbers_are_read_with_thousands_separators_and_decimals() -> None:
    assert numbers_in("1234 × 5678 = 7,006,652, about 7.0e6") == [1234, 5678, 7006652, 7.0]
    assert numbers_in("It is -3 degrees and 0.875 of it") == [-3, 0.875]
    assert numbers_in("2026-03-10") == [2026, 3, 10]


@pytest.mark.parametrize(
    ("answer", "expect", "ok"),
    [
        ("23 × 19 = 437.", Expect(number=437), True),
        ("The product is 7,006,652.", Expect(number=7006652), True),
        ("22/7 is about 3.1429", Expect(number=3.143), True),
        ("It is 438.", Expect(number=437), False),
        ("No idea.", Expect(number=437), False),
        ("Today is 2026-03-10.", Expect(date=dt.date(2026, 3, 10)), True),
        ("Today is Tuesday, March 10, 2026.", Expect(date=dt.date(2026, 3, 10)), True),
        ("It is the 10th of March 2026.", Expect(date=dt.date(2026, 3, 10)), True),
        ("Today is 10 March\n2026.", Expect(date=dt.date(2026, 3, 10)), True),
        ("Today is 11 March 2026.", Expect(date=dt.date(2026, 3, 10)), False),
        ("It is a TUESDAY.", Expect(any=["Tuesday"]), True),
        ("It is 11:00 PM in Tokyo.", Expect(any=["23:00", "11:00 PM"]), True),
        ("It is Monday.", Expect(any=["Tuesday"]), False),
    ],
)
def test_an_answer_is_correct_when_it_holds_the_expected_value(
    answer: str, expect: Expect, ok: bool
) -> None:
    assert is_correct(answer, expect) is ok


def test_expect_needs_exactly_one_kind_of_value() -> None:
    with pytest.raises(ValidationError):
        Expect()
    with pytest.raises(ValidationError):
        Expect(number=1, any=["1"])


def test_the_first_tool_call_decides_tool_choice_and_a_failed_run_is_never_correct() -> None:
    q = load_set().questions[0]
    assert q.tool == "calculator" and q.expect.number == 437
    good = score(q, "done", ["calculator"], "437", 1.0)
    assert good.correct and good.tool_ok
    late = score(q, "done", ["current_time", "calculator"], "437", 1.0)
    assert late.correct and not late.tool_ok
    none = score(q, "done", [], "437", 1.0)
    assert none.correct and not none.tool_ok
    failed = score(q, "error", ["calculator"], "437", 1.0)
    assert not failed.correct and failed.tool_ok


def test_the_summary_gives_shares_overall_and_per_kind() -> None:
    def outcome(kind: str, correct: bool, tool_ok: bool, status: str = "done") -> Outcome:
        return Outcome("x", kind, status, [], "", correct, tool_ok, 2.0)

    rows = [
        outcome("arithmetic", True, True),
        outcome("arithmetic", False, True),
        outcome("date", True, False),
        outcome("document", False, False, "timeout"),
    ]
    s = summary("m", rows)
    assert (s["correct"], s["tool_choice"], s["mean_s"], s["errors"]) == (0.5, 0.5, 2.0, 1)
    assert s["by_kind"]["arithmetic"] == {
        "questions": 2,
        "correct": 0.5,
        "tool_choice": 1.0,
        "mean_s": 2.0,
    }


def test_a_citation_marker_is_not_a_figure_of_the_answer() -> None:
    one = Expect(number=1)
    assert not is_correct("The team has 11 engineers [1].", one)
    assert is_correct("It takes 1 day [2, 3].", one)


def test_the_summary_counts_the_document_answers_that_cite_a_passage() -> None:
    shipped = {q.id: q for q in load_set().questions}
    rows = [
        score(shipped["k01"], "done", ["search_docs"], "62 EUR [1].", 1.0, cited=["travel"]),
        score(shipped["k02"], "done", ["search_docs"], "48 EUR.", 1.0),
        score(shipped["a01"], "done", ["calculator"], "437", 1.0),
    ]
    s = summary("m", rows)
    assert s["cited"] == "1/2"
    assert s["by_kind"]["document"]["cited"] == "1/2"
    assert "cited" not in s["by_kind"]["arithmetic"]  # no question there reads the documents


def test_wrong_answers_that_ended_verified_are_counted_and_split_by_recomputable() -> None:
    hard = {q.id: q for q in load_set(name="hard").questions}

    def ran(qid: str, answer: str, verified: bool | None) -> Outcome:
        draft = JudgedDraft(0, False, ("critic:OK", "verifier:pass"))
        return score(hard[qid], "done", [], answer, 1.0, verified=verified, drafts=[draft])

    rows = [
        ran("p04", "700002", True),  # the calculator could recompute it
        ran("n03", "Port 6543.", True),  # no tool recomputes a fact the documents lack
        ran("u01", "35", False),  # caught: not verified
    ]
    s = summary("m", rows)
    assert (s["wrong_verified"], s["wrong_verified_recomputable"]) == (2, 1)
    assert [o.recomputable for o in rows] == [True, False, True]


def test_the_share_of_verified_answers_that_are_right_is_reported() -> None:
    hard = {q.id: q for q in load_set(name="hard").questions}
    judged = [JudgedDraft(0, False, ("critic:OK", "verifier:pass"))]
    p04 = hard["p04"]
    rows = [
        score(p04, "done", [], "700002", 1.0, verified=True, drafts=judged),  # wrong, verified
        score(p04, "done", [], "7006652", 1.0, verified=True, drafts=judged),
        score(p04, "done", [], "35", 1.0, verified=None, drafts=judged),  # unknown: not counted
    ]
    s = summary("m", rows)
    assert (s["verified_yes"], s["verified_yes_right"]) == (2, 1)


# --- the shipped question file -------------------------------------------------------


def test_the_shipped_set_has_thirty_tool_questions_of_each_kind() -> None:
    shipped = load_set()
    assert len(shipped.questions) >= 30
    kinds = {q.kind for q in shipped.questions}
    assert kinds == {"arithmetic", "date", "document"}
    assert shipped.today.utcoffset() is not None
    assert {q.tool for q in shipped.questions} == {"calculator", "current_time", "search_docs"}
    assert shipped.documents


def test_each_reference_call_fits_its_tool_schema() -> None:
    specs = {t.spec.name: t.spec for t in builtin_tools()}
    specs["search_docs"] = SearchDocs.spec
    for q in load_set().questions:
        jsonschema.validate(q.arguments, specs[q.tool].input_schema)


def test_the_question_file_is_strict(tmp_path: Path) -> None:
    raw = json.loads(load_set().model_dump_json())
    raw["questions"][0]["unexpected"] = 1
    with pytest.raises(ValidationError):
        AnswerSet.model_validate(raw)
    raw = json.loads(load_set().model_dump_json())
    raw["questions"][1]["id"] = raw["questions"][0]["id"]
    with pytest.raises(ValidationError, match="unique"):
        AnswerSet.model_validate(raw)
    raw = json.loads(load_set().model_dump_json())
    raw["today"] = "2026-03-10T14:00:00"
    path = tmp_path / "set.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ValidationError, match="offset"):
        load_set(path)


# --- choosing the local model --------------------------------------------------------


def test_the_local_model_setting_chooses_the_weights(tmp_path: Path) -> None:
    assert list(LOCAL_MODELS) == ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
    default = make_llm(AgentSettings(data_dir=tmp_path))
    assert default.name == "local:qwen2.5-coder-0.5b-instruct-q4_k_m"
    chosen = make_llm(
        AgentSettings(data_dir=tmp_path, llm_local_model="qwen2.5-coder-1.5b", llm_threads=1)
    )
    assert isinstance(chosen, ObservedLLM) and isinstance(chosen.inner, LocalLLM)
    assert chosen.name == "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert chosen.inner.threads == 1
    with pytest.raises(ValidationError):
        AgentSettings(llm_local_model="qwen2.5-coder-70b")  # type: ignore[arg-type]


def test_the_1_5b_weights_are_pinned() -> None:
    assert QWEN25_CODER_15B.size == 1_117_320_768
    assert QWEN25_CODER_15B.sha256 == (
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    )
    assert len(QWEN25_CODER_15B.distributions) == 22


def test_missing_weight_packages_name_the_command_that_installs_them() -> None:
    spec = WeightsSpec(
        filename="absent.gguf",
        distributions=("agentbus-test-absent-weights-part1",),
        version="0.1.0",
        sha256="0" * 64,
        size=1,
        install=QWEN25_CODER_15B.install,
    )
    with pytest.raises(ModelNotInstalled) as e:
        locate_parts(spec)
    assert "make install-1.5b" in str(e.value) and "--extra local-15b" in str(e.value)


def test_kinds_take_turns_so_a_short_run_covers_each() -> None:
    shipped = load_set()
    ordered = [q.id for q in in_turns(shipped).questions]
    assert ordered[:4] == ["a01", "d01", "k01", "a02"]
    assert sorted(ordered) == sorted(q.id for q in shipped.questions)
    assert [q.id for q in in_turns(shipped, per_kind=1).questions] == ["a01", "d01", "k01"]


def test_the_hard_set_has_a_dev_half_holding_the_cases_rules_were_fixed_against() -> None:
    # Every question of the hard set belongs to a half; t02 (a contradiction rule) and p03
    # (a backwards recompute) were fixed against, so they are dev, never test.
    hard = load_set(name="hard")
    dev = {q.id for q in in_half(hard, "dev").questions}
    test = {q.id for q in in_half(hard, "test").questions}
    assert {"t02", "p03"} <= dev
    assert not dev & test
    assert dev | test == {q.id for q in hard.questions}
    assert {q.kind for q in in_half(hard, "test").questions} == {q.kind for q in hard.questions}


def test_the_hard_sets_reference_calls_fit_their_tools_and_reach_the_answer() -> None:
    # Every reference call (the first and the `then` ones) is valid for its tool, and the
    # last calculator call computes what the question expects.
    specs = {t.spec.name: t.spec for t in builtin_tools()}
    specs["search_docs"] = SearchDocs.spec
    hard = load_set(name="hard")
    assert {q.kind for q in hard.questions} == {
        "two_facts", "duration", "percentage", "code", "not_in_documents"
    }  # fmt: skip
    for q in hard.questions:
        calls = [] if q.tool == "none" else [(q.tool, q.arguments)]
        calls += [(c.tool, c.arguments) for c in q.then]
        for tool, arguments in calls:
            jsonschema.validate(arguments, specs[tool].input_schema)
        computed = [a for t, a in calls if t == "calculator"]
        if computed:
            out = asyncio.run(Calculator().run(computed[-1], None))
            assert is_correct(str(out["result"]), q.expect), (q.id, out)
        else:
            assert q.reference is not None and is_correct(q.reference, q.expect), q.id


@pytest.mark.parametrize(
    ("answer", "right"),
    [
        ("The trip takes 225 minutes.", True),
        ("It takes 3 hours and 45 minutes.", True),  # the "215 minutes as 3 h 35"
        ("3 h 45 min", True),
        ("3.75 hours", True),
        ("35 minutes", False),
        ("from 14:05 to 17:50", False),
    ],
)
def test_a_duration_in_minutes_may_be_written_as_hours_and_minutes(
    answer: str, right: bool
) -> None:
    assert is_correct(answer, Expect(minutes=225)) is right
