"""The claim check a judge runs: the model's verdict, the rules' findings added to it.

The model reads each claim against the evidence and its findings decide; the rules run
too and can only add findings (a figure the evidence states differently is found even
when the model missed it), never remove one. Without evidence there is nothing to read a
claim against: the model is not asked. A model reply that cannot be read leaves the rules'
findings and a note saying the model could not tell.
"""

from __future__ import annotations

from agents.understanding.claims.ports import ClaimCheck, ClaimDraft, ClaimReport


class ModelWithRules:
    """`agents.understanding.claims.ports.ClaimCheck`: the model's findings, then the rules'
    on top."""

    def __init__(self, model: ClaimCheck, rules: ClaimCheck) -> None:
        self._model = model
        self._rules = rules

    @property
    def name(self) -> str:
        """``model+rules``."""
        return f"{self._model.name}+{self._rules.name}"

    async def check(self, draft: ClaimDraft) -> ClaimReport:
        """Both checks' findings on one draft: one model call at most."""
        ruled = await self._rules.check(draft)
        if not any(e.strip() for e in draft.evidence) or not draft.draft.strip():
            return ruled.model_copy(update={"checker": self.name})
        modelled = await self._model.check(draft)
        seen = {c.claim for c in modelled.claims}
        claims = [*modelled.claims, *(c for c in ruled.claims if c.claim not in seen)]
        return ClaimReport(
            checker=self.name,
            claims=claims,
            readable=modelled.readable,
            note=modelled.note,
            usage=modelled.usage,
        )
