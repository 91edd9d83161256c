"""Claim checking: is each figure or clause of a draft supported, contradicted, or absent in
the evidence the run read.

One port (`agents.understanding.claims.ports.ClaimCheck`), two implementations: the
configured model under a JSON schema, one call per draft
(`agents.understanding.claims.model`), and rules built on language libraries
(`agents.understanding.claims.rules`, over `grounding` and `contradictions`). The last
judge's fact-check asks the one the deployment chose (`AGENTBUS_CLAIM_CHECK`): the rules,
or `agents.understanding.claims.combined`, where the model's findings decide and the rules
can only add to them.
"""
