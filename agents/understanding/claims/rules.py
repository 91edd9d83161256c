"""The claim check by rules (`agents.understanding.claims.grounding`,
`agents.understanding.claims.contradictions`): no model.

It finds what string-level reading can: a figure the evidence states differently for the
same thing, a figure or a clause nothing the draft may rest on holds, a figure taken from
a part of the evidence about something else, a limit dropped. It never says a claim is
supported: it lists findings only.
"""

from __future__ import annotations

from agents.understanding.claims import grounding
from agents.understanding.claims.ports import ClaimDraft, ClaimReport


class RulesClaimCheck:
    """`agents.understanding.claims.ports.ClaimCheck` by rules built on language libraries."""

    @property
    def name(self) -> str:
        """``rules``."""
        return "rules"

    async def check(self, draft: ClaimDraft) -> ClaimReport:
        """The grounding checks' findings on the draft."""
        found = grounding.checked(
            draft.draft,
            draft.question,
            draft.evidence,
            draft.computed,
            read_documents=draft.read_documents,
        )
        return ClaimReport(checker=self.name, claims=found)
