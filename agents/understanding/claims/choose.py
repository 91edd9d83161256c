"""Which claim check a deployment runs (``AGENTBUS_CLAIM_CHECK``)."""

from __future__ import annotations

from typing import Literal

from agents.llm.ports import LLM
from agents.understanding.claims.combined import ModelWithRules
from agents.understanding.claims.model import ModelClaimCheck
from agents.understanding.claims.ports import ClaimCheck
from agents.understanding.claims.rules import RulesClaimCheck


def claim_check(kind: Literal["model", "rules"], llm: LLM) -> ClaimCheck:
    """``model``: the model's findings with the rules' added; ``rules``: the rules alone."""
    if kind == "rules":
        return RulesClaimCheck()
    return ModelWithRules(ModelClaimCheck(llm), RulesClaimCheck())
