"""The claim check wired through the last judge's step: the critic and the verifier, with a
scripted model that answers the claim check's call with JSON."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import fakeredis.aioredis
import pytest

from agents.deps import AgentDeps
from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, agent_of, text, turn
from agents.roles.critic import make_critic
from agents.roles.verifier import make_verifier
from agents.understanding.claims.choose import claim_check
from bus import keys
from bus.commands import AgentTask, Command, deadline_in
from bus.events import Critique, Verdict
from bus.run_state import EvidenceItem, RunSettings, RunState
from bus.runtime.context import StepContext
from bus.settings import BusSettings
from bus.store import ConversationStore, RunStore, make_engine

# Made up for this test, no case of an eval set.
EVIDENCE = (
    "Pinecrest campsite rules. Pitches cost 18 EUR a night. Quiet hours run from 22:00. The "
    "campsite is run by Marta Silva."
)
QUESTION = "How much is a pitch at Pinecrest per night?"


def _claims(standing: str, said: str, told: str) -> str:
    claim = {
        "draft_claim": f"A pitch costs {said} a night",
        "sentence": "1.2",
        "draft_says": said,
        "evidence_says": told,
        "standing": standing,
    }
    return json.dumps({"claims": [claim]})


def _model(
    claims_reply: str, verifier_reply: str | None = None, critic_reply: str | None = None
) -> ScriptedLLM:
    def play(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        role = agent_of(messages, options)
        if role == "claims":
            return turn(text(claims_reply))
        if role == "critic":
            return turn(text(critic_reply or '{"verdict": "OK", "reason": "reads as supported"}'))
        if role == "verifier":
            said = verifier_reply or '{"verdict": "pass", "reasons": ["reads as supported"]}'
            return turn(text(said))
        return turn(text("nothing to check"))

    return ScriptedLLM(play)


@pytest.fixture
async def judge_of() -> AsyncIterator[Any]:
    engine = make_engine("sqlite+aiosqlite:///:memory:")  # the judges never touch the store
    redis = fakeredis.aioredis.FakeRedis()

    async def judge(role: keys.Role, llm: ScriptedLLM, draft: str) -> Critique | Verdict:
        deps = AgentDeps(
            llm=llm,
            tools=[],
            runs=RunStore(engine),
            conversations=ConversationStore(engine),
            claims=claim_check("model", llm),
        )
        accuracy = "accurate" if role == keys.Role.VERIFIER else "standard"
        state = RunState(
            question=QUESTION,
            draft=draft,
            settings=RunSettings(mode="multi", accuracy=accuracy),
            evidence=[EvidenceItem(ref=1, source_kind="documents", source="camp", text=EVIDENCE)],
        )
        command = Command(
            run_id="run-1",
            tenant_id="t1",
            subject="alice",
            role=role,
            step=4,
            deadline=deadline_in(60),
            payload=AgentTask(state=state),
        )
        handler = make_verifier(deps) if role == keys.Role.VERIFIER else make_critic(deps)
        result = await handler(StepContext(command, 1, redis, BusSettings()), command)
        [said] = [e for e in result.events if isinstance(e, Critique | Verdict)]
        return said

    yield judge
    await redis.aclose()
    await engine.dispose()


async def test_the_critic_revises_a_draft_whose_figure_the_evidence_states_differently(
    judge_of: Any,
) -> None:
    llm = _model(_claims("supported", "81 EUR", "18 EUR"))  # the model misjudged; code compares
    critique = await judge_of(keys.Role.CRITIC, llm, "A pitch costs 81 EUR a night [1].")
    assert isinstance(critique, Critique)
    assert critique.verdict == "REVISE"
    assert "81 EUR" in critique.reason and "18 EUR" in critique.reason
    roles = [agent_of(m, o) for m, _, o in llm.requests]
    assert roles.count("claims") == 1  # one call per draft, not per claim


async def test_the_critic_approves_a_draft_every_claim_of_which_the_evidence_holds(
    judge_of: Any,
) -> None:
    llm = _model(_claims("supported", "18 EUR", "18 EUR"))
    critique = await judge_of(keys.Role.CRITIC, llm, "A pitch costs 18 EUR a night [1].")
    assert (critique.verdict, critique.reason) == ("OK", "reads as supported")


async def test_the_verifier_asks_for_a_revision_when_the_model_finds_a_claim_absent(
    judge_of: Any,
) -> None:
    absent = json.dumps(
        {
            "claims": [
                {
                    "draft_claim": "dogs stay free",
                    "sentence": "none",
                    "draft_says": "dogs stay free",
                    "evidence_says": "",
                    "standing": "absent",
                }
            ]
        }
    )
    draft = "A pitch costs 18 EUR a night [1], and dogs stay free."
    verdict = await judge_of(keys.Role.VERIFIER, _model(absent), draft)
    assert isinstance(verdict, Verdict)
    assert verdict.verdict == "needs_revision"
    assert any("dogs stay free" in r for r in verdict.reasons)


async def test_an_unreadable_claim_check_leaves_the_judges_verdict_and_says_so(
    judge_of: Any,
) -> None:
    verdict = await judge_of(
        keys.Role.VERIFIER, _model("looks fine"), "A pitch costs 18 EUR a night [1]."
    )
    assert verdict.verdict == "pass"
    assert any("could not be read" in r for r in verdict.reasons)


async def test_a_reason_the_verifier_gives_several_times_is_shown_once(judge_of: Any) -> None:
    again = "The price is supported by the evidence."
    reply = json.dumps({"verdict": "pass", "reasons": [again, f" {again}", again]})
    llm = _model(_claims("supported", "18 EUR", "18 EUR"), reply)
    verdict = await judge_of(keys.Role.VERIFIER, llm, "A pitch costs 18 EUR a night [1].")
    assert isinstance(verdict, Verdict)
    assert verdict.verdict == "pass" and list(verdict.reasons) == [again]


def _flag(verdict: str, reason: str, draft_says: str, evidence_says: str) -> str:
    key = "reason" if verdict in ("REVISE", "REPLAN") else "reasons"
    said: Any = reason if key == "reason" else [reason]
    return json.dumps(
        {"verdict": verdict, key: said, "draft_says": draft_says, "evidence_says": evidence_says}
    )


async def test_a_critic_flag_that_restates_the_draft_as_its_error_is_unknown(
    judge_of: Any,
) -> None:
    # The model's own REVISE of a right draft: its "evidence" is the draft's own sentence.
    flag = _flag("REVISE", "the draft says 18 EUR", "18 EUR", "A pitch costs 18 EUR a night")
    llm = _model(_claims("supported", "18 EUR", "18 EUR"), critic_reply=flag)
    critique = await judge_of(keys.Role.CRITIC, llm, "A pitch costs 18 EUR a night [1].")
    assert critique.verdict == "UNKNOWN"  # not a refutation, and never a pass
    assert "quotes nothing the evidence says" in critique.reason


async def test_a_flag_quoting_evidence_that_states_what_the_draft_states_is_unknown(
    judge_of: Any,
) -> None:
    reply = _flag("needs_revision", "price unsupported", "18 EUR", "Pitches cost 18 EUR a night")
    llm = _model(_claims("supported", "18 EUR", "18 EUR"), verifier_reply=reply)
    verdict = await judge_of(keys.Role.VERIFIER, llm, "A pitch costs 18 EUR a night [1].")
    assert isinstance(verdict, Verdict)
    assert verdict.verdict == "unknown"
    assert any("states what the draft states" in r for r in verdict.reasons)


async def test_a_flag_quoting_evidence_that_states_otherwise_stands(judge_of: Any) -> None:
    # No rule catches a wrong name here; the model does, and quotes the evidence for it.
    flag = _flag(
        "REVISE", "wrong manager", "run by Jonas Berg", "The campsite is run by Marta Silva"
    )
    llm = _model(_claims("supported", "Jonas Berg", "Jonas Berg"), critic_reply=flag)
    critique = await judge_of(keys.Role.CRITIC, llm, "The campsite is run by Jonas Berg [1].")
    assert (critique.verdict, critique.reason) == ("REVISE", "wrong manager")
    reply = _flag("fail", "wrong manager", "Jonas Berg", "run by Marta Silva")
    llm = _model(_claims("supported", "Jonas Berg", "Jonas Berg"), verifier_reply=reply)
    verdict = await judge_of(keys.Role.VERIFIER, llm, "The campsite is run by Jonas Berg [1].")
    assert verdict.verdict == "fail"


async def test_a_judges_reason_shows_no_field_name_of_its_schema(judge_of: Any) -> None:
    echoed = "The manager is Marta Silva; draft_says]:"
    flag = _flag("REVISE", echoed, "run by Jonas Berg", "The campsite is run by Marta Silva")
    llm = _model(_claims("supported", "Jonas Berg", "Jonas Berg"), critic_reply=flag)
    critique = await judge_of(keys.Role.CRITIC, llm, "The campsite is run by Jonas Berg [1].")
    assert (critique.verdict, critique.reason) == ("REVISE", "The manager is Marta Silva")
    reply = _flag("fail", echoed, "Jonas Berg", "run by Marta Silva")
    llm = _model(_claims("supported", "Jonas Berg", "Jonas Berg"), verifier_reply=reply)
    verdict = await judge_of(keys.Role.VERIFIER, llm, "The campsite is run by Jonas Berg [1].")
    assert (verdict.verdict, list(verdict.reasons)) == ("fail", ["The manager is Marta Silva"])


async def test_a_judges_reason_shows_none_of_the_prompts_labels(judge_of: Any) -> None:
    # The 0.5B copies the claim pair it read as its reason: the user reads the claim only.
    echoed = "1. The draft says: The campsite is run by Marta Silva"
    reply = json.dumps({"claims": ["same"], "verdict": "OK", "reason": echoed,
                        "draft_says": "", "evidence_says": ""})  # fmt: skip
    llm = _model(_claims("supported", "Marta Silva", "Marta Silva"), critic_reply=reply)
    critique = await judge_of(keys.Role.CRITIC, llm, "The campsite is run by Marta Silva [1].")
    assert (critique.verdict, critique.reason) == ("OK", "The campsite is run by Marta Silva")
    reasons = [echoed, "The evidence says:"]
    reply = json.dumps({"claims": ["same"], "verdict": "pass", "reasons": reasons,
                        "draft_says": "", "evidence_says": ""})  # fmt: skip
    llm = _model(_claims("supported", "Marta Silva", "Marta Silva"), verifier_reply=reply)
    verdict = await judge_of(keys.Role.VERIFIER, llm, "The campsite is run by Marta Silva [1].")
    assert isinstance(verdict, Verdict)
    assert list(verdict.reasons) == ["The campsite is run by Marta Silva"]


async def test_a_verifier_reason_that_was_only_a_field_name_is_not_shown(judge_of: Any) -> None:
    # The 0.5B ran on into the next field as a reason of its own: nothing of it is left.
    reply = json.dumps(
        {
            "verdict": "fail",
            "reasons": ["wrong manager", "draft_says]:"],
            "draft_says": "Jonas Berg",
            "evidence_says": "run by Marta Silva",
        }
    )
    llm = _model(_claims("supported", "Jonas Berg", "Jonas Berg"), verifier_reply=reply)
    verdict = await judge_of(keys.Role.VERIFIER, llm, "The campsite is run by Jonas Berg [1].")
    assert (verdict.verdict, list(verdict.reasons)) == ("fail", ["wrong manager"])


@pytest.mark.parametrize("role", [keys.Role.CRITIC, keys.Role.VERIFIER])
async def test_a_claim_the_judge_says_the_evidence_beside_it_differs_from_is_a_revision(
    judge_of: Any, role: keys.Role
) -> None:
    # The model approves the draft as a whole, and its claim-by-claim reading finds the name.
    critic = json.dumps(
        {"claims": ["differs"], "verdict": "OK", "reason": "fine", "draft_says": "",
         "evidence_says": ""}
    )  # fmt: skip
    verifier = json.dumps(
        {"claims": ["differs"], "verdict": "pass", "reasons": ["fine"], "draft_says": "",
         "evidence_says": ""}
    )  # fmt: skip
    llm = _model('{"claims": []}', verifier_reply=verifier, critic_reply=critic)
    said = await judge_of(role, llm, "The campsite is run by Jonas Berg [1].")
    assert said.verdict in ("REVISE", "needs_revision")
    reason = said.reason if isinstance(said, Critique) else " ".join(said.reasons)
    assert "Jonas Berg" in reason and "Marta Silva" in reason
    [request] = [m for m, _, o in llm.requests if agent_of(m, o) in ("critic", "verifier")]
    shown = " ".join(m.content for m in request)
    assert "1. The draft says: The campsite is run by Jonas Berg" in shown
    assert "The evidence says: The campsite is run by Marta Silva" in shown


@pytest.mark.parametrize("role", [keys.Role.CRITIC, keys.Role.VERIFIER])
async def test_a_claim_said_to_differ_from_evidence_stating_the_same_is_no_revision(
    judge_of: Any, role: keys.Role
) -> None:
    critic = json.dumps(
        {"claims": ["differs"], "verdict": "OK", "reason": "fine", "draft_says": "",
         "evidence_says": ""}
    )  # fmt: skip
    verifier = json.dumps(
        {"claims": ["differs"], "verdict": "pass", "reasons": ["fine"], "draft_says": "",
         "evidence_says": ""}
    )  # fmt: skip
    llm = _model('{"claims": []}', verifier_reply=verifier, critic_reply=critic)
    said = await judge_of(role, llm, "A pitch costs 18 EUR a night [1].")
    assert said.verdict in ("OK", "pass")


async def test_a_flag_whose_quote_is_no_evidence_stands_on_the_claim_it_names(
    judge_of: Any,
) -> None:
    # A paraphrased quote: not the evidence's words, but the claim it names is refuted there.
    flag = _flag("REVISE", "wrong manager", "Jonas Berg", "the manager is someone else")
    llm = _model('{"claims": []}', critic_reply=flag)
    critique = await judge_of(keys.Role.CRITIC, llm, "The campsite is run by Jonas Berg [1].")
    assert critique.verdict == "REVISE" and "Marta Silva" in critique.reason
    reply = _flag("fail", "wrong manager", "Jonas Berg", "the manager is someone else")
    llm = _model('{"claims": []}', verifier_reply=reply)
    verdict = await judge_of(keys.Role.VERIFIER, llm, "The campsite is run by Jonas Berg [1].")
    assert verdict.verdict == "fail" and any("Marta Silva" in r for r in verdict.reasons)
