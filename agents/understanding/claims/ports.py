"""The claim-checking port: a draft and its evidence in, each claim's standing out."""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agents.llm.ports import Usage

Standing = Literal["supported", "contradicted", "absent"]


class ClaimDraft(BaseModel):
    """What a claim check reads: the question, the draft and what the draft may rest on."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    question: str
    draft: str
    evidence: list[str] = Field(default=[], description="Passages and looked-up tool output.")
    computed: list[str] = Field(default=[], description="What tools computed (today too).")
    read_documents: bool = Field(
        default=True, description="Whether any of the evidence came from the documents."
    )
    model: str | None = Field(default=None, description="The judge's model (None: the run's).")


class CheckedClaim(BaseModel):
    """One claim of the draft and how the evidence stands to it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    claim: str = Field(description="The figure or clause of the draft, as written.")
    standing: Standing
    evidence: str = Field(default="", description="What the evidence states about it.")
    reason: str = Field(default="", description="What the researcher should do about it.")

    @property
    def finding(self) -> bool:
        """The evidence does not support it."""
        return self.standing != "supported"


class ClaimReport(BaseModel):
    """A claim check's answer for one draft."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    checker: str = Field(description="Which implementation answered: model, rules, ...")
    claims: list[CheckedClaim] = []
    readable: bool = Field(
        default=True, description="False: the model's reply could not be read (no verdict)."
    )
    note: str = Field(default="", description="Why it could not tell, when it could not.")
    usage: Usage | None = None

    @property
    def findings(self) -> list[CheckedClaim]:
        """The claims the evidence does not support."""
        return [c for c in self.claims if c.finding]

    def reasons(self) -> list[str]:
        """One revision reason per finding, as the judge gives them to the researcher."""
        return [c.reason or _reason(c) for c in self.findings]


def _reason(claim: CheckedClaim) -> str:
    if claim.standing == "contradicted":
        said = f" (the evidence states: {claim.evidence})" if claim.evidence else ""
        return (
            f"the draft states {claim.claim!r}{said}: the evidence contradicts it; answer "
            "with what the evidence states"
        )
    return (
        f"the evidence does not hold this claim of the draft: {claim.claim!r}; drop it, or "
        "say the documents do not say"
    )


class ClaimCheck(Protocol):
    """Checks a draft's claims against its evidence."""

    @property
    def name(self) -> str:
        """Which implementation this is (``model``, ``rules``, ``model+rules``)."""
        ...

    async def check(self, draft: ClaimDraft) -> ClaimReport:
        """Each claim of ``draft`` with its standing; never raises for a model failure
        (the report says it could not read the model, and why)."""
        ...
