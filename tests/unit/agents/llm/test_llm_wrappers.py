"""The wrappers every run's model goes through (priced and traced, then budgeted) pass the LLM
contract around an adapter that does: wrapping changes no event a caller sees."""

from __future__ import annotations

import pytest

from agents.llm.budgeted import BudgetedLLM
from agents.llm.observed import ObservedLLM
from agents.llm.ports import LLM
from agents.llm.scripted import ScriptedLLM
from tests.contracts.llm import LLMContract, canonical_turn


class TestObservedContract(LLMContract):
    @pytest.fixture
    def llm(self) -> LLM:
        return ObservedLLM(ScriptedLLM(canonical_turn), {})


class TestBudgetedContract(LLMContract):
    @pytest.fixture
    def llm(self) -> LLM:
        return BudgetedLLM(ObservedLLM(ScriptedLLM(canonical_turn), {}), {})
