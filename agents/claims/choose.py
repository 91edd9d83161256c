"""Which claim check a deployment runs (``AGENTBUS_CLAIM_CHECK``)."""

from __future__ import annotations

from typing import Literal

from agents.claims.combined import ModelWithRules
from agents.claims.model import ModelClaimCheck
from agents.claims.ports import ClaimCheck
from agents.claims.rules import RulesClaimCheck
from agents.llm.ports import LLM


def claim_check(kind: Literal["model", "rules"], llm: LLM) -> ClaimCheck:
    """``model``: the model's findings with the rules' added; ``rules``: the rules alone."""
    if kind == "rules":
        return RulesClaimCheck()
    return ModelWithRules(ModelClaimCheck(llm), RulesClaimCheck())
