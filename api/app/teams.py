"""Teams' use cases: apply (check, then store a new version), read, list, delete, draw.

A team is checked against what its tenant may use before it is stored: the tools the
tenant enabled (every server tool when it enabled none), the models the deployment serves,
and the gates only when runs have a state store. The shipped ``single`` and ``multi``
documents read like a tenant's teams (version 0) and cannot be replaced or deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from agents.teams import draw
from agents.teams.check import Allowance, check
from agents.teams.document import TeamDocument
from agents.teams.faults import TeamFault, TeamInvalid
from agents.teams.parse import parse_team, team_from_data
from agents.teams.shipped import SHIPPED, shipped
from api.app.errors import TeamNotFound, TeamRefused
from bus.store import TeamRecord, TeamStore, TenantSettingsStore
from bus.store.repository import utcnow

#: Who "wrote" a shipped team.
SHIPPED_BY = "agentbus"
#: Names a tenant's team may not take: the built-in modes'.
RESERVED = frozenset({*SHIPPED, "custom"})


def _refused(faults: list[TeamFault]) -> TeamRefused:
    error = TeamInvalid(faults)
    return TeamRefused(error.message, faults=[f.model_dump() for f in faults])


class TeamBook:
    """The teams of every tenant, checked before they are stored.

    Args:
        store: the teams' repository.
        tenant_settings: the tenants' preferences (which tools each enabled).
        models: the models the deployment serves (empty: any, it offers no choice).
        server_tools: the gateway's own tools.
        gates: whether runs have a state store to wait in at a gate.
    """

    def __init__(
        self,
        store: TeamStore,
        tenant_settings: TenantSettingsStore,
        *,
        models: Sequence[str],
        server_tools: frozenset[str],
        gates: bool,
    ) -> None:
        self._store = store
        self._tenant_settings = tenant_settings
        self._models = frozenset(models) or None
        self._server_tools = server_tools
        self._gates = gates

    async def allowance(self, tenant_id: str) -> Allowance:
        """What a team of this tenant may use."""
        record = await self._tenant_settings.get(tenant_id)
        prefs: dict[str, Any] = record.settings if record is not None else {}
        enabled = prefs.get("enabled_tools")
        if enabled is not None:
            tools: frozenset[str] | None = frozenset(enabled)
        elif prefs.get("mcp_servers"):
            tools = None  # its MCP servers' tools are known when the gateway connects
        else:
            tools = self._server_tools
        return Allowance(tools=tools, models=self._models, store=self._gates)

    async def apply(self, tenant_id: str, name: str, text: str, by: str) -> TeamRecord:
        """Check the team ``text`` (YAML or JSON) holds and store it as its next version.

        Raises:
            TeamRefused: the text is not a team, or the team cannot run (422, each fault).
        """
        try:
            doc = parse_team(text)
        except TeamInvalid as e:
            raise _refused(e.faults) from e
        return await self.apply_document(tenant_id, name, doc, by)

    async def apply_data(self, tenant_id: str, name: str, data: Any, by: str) -> TeamRecord:
        """:meth:`apply` for a document already decoded (a JSON body)."""
        try:
            doc = team_from_data(data)
        except TeamInvalid as e:
            raise _refused(e.faults) from e
        return await self.apply_document(tenant_id, name, doc, by)

    async def apply_document(
        self, tenant_id: str, name: str, doc: TeamDocument, by: str
    ) -> TeamRecord:
        """Check ``doc`` and store it as the team's next version (see :meth:`apply`)."""
        faults: list[TeamFault] = []
        if name in RESERVED:
            faults.append(
                TeamFault(
                    pointer="/name",
                    code="reserved_name",
                    message=f"{name!r} is a built-in mode; name the team otherwise",
                )
            )
        if doc.name is not None and doc.name != name:
            faults.append(
                TeamFault(
                    pointer="/name",
                    code="name_mismatch",
                    message=f"the document names {doc.name!r}, stored as {name!r}",
                )
            )
        faults += check(doc, await self.allowance(tenant_id))
        if faults:
            raise _refused(faults)
        stored = doc.model_copy(update={"name": name})
        document = stored.model_dump(mode="json", by_alias=True, exclude_none=True)
        return await self._store.put(tenant_id, name, document, by)

    async def get(self, tenant_id: str, name: str, version: int | None = None) -> TeamRecord:
        """A team's latest version (or the one asked for); a shipped mode's document.

        Raises:
            TeamNotFound: no such team (or version) in the tenant.
        """
        if name in SHIPPED and version in (None, 0):
            return _shipped(tenant_id, name)
        record = await self._store.get(tenant_id, name, version)
        if record is None:
            raise TeamNotFound(f"no team {name!r} in your tenant")
        return record

    async def list(self, tenant_id: str) -> list[TeamRecord]:
        """The shipped modes, then the tenant's teams by name."""
        own = await self._store.list(tenant_id)
        return [*(_shipped(tenant_id, n) for n in SHIPPED), *own]

    async def delete(self, tenant_id: str, name: str) -> None:
        """Delete a team (runs in flight keep their version).

        Raises:
            TeamNotFound: no such team in the tenant (a shipped mode is never deleted).
        """
        if name in RESERVED or not await self._store.delete(tenant_id, name):
            raise TeamNotFound(f"no team {name!r} of your tenant to delete")

    async def mermaid(self, tenant_id: str, name: str, version: int | None = None) -> str:
        """A team's graph as a Mermaid flowchart."""
        record = await self.get(tenant_id, name, version)
        return draw.mermaid(TeamDocument.model_validate(record.document))


def _shipped(tenant_id: str, name: str) -> TeamRecord:
    document = shipped(name).model_dump(mode="json", by_alias=True, exclude_none=True)
    return TeamRecord(
        tenant_id=tenant_id,
        name=name,
        version=0,
        document=document,
        created_at=utcnow(),
        created_by=SHIPPED_BY,
    )


class TeamView(BaseModel):
    """One version of a team."""

    name: str
    version: int
    created_at: datetime
    created_by: str
    document: dict[str, Any]


class TeamSummary(BaseModel):
    """A team as listed: its latest version and what it declares."""

    name: str
    version: int
    description: str
    agents: list[str]
    created_at: datetime
    created_by: str


def view_of(record: TeamRecord) -> TeamView:
    """A stored version of a team as the API shows it."""
    return TeamView.model_validate(record, from_attributes=True)


def summary_of(record: TeamRecord) -> TeamSummary:
    """A team as listed: its version and what its document declares."""
    doc = TeamDocument.model_validate(record.document)
    return TeamSummary(
        name=record.name,
        version=record.version,
        description=doc.description,
        agents=[a.name for a in doc.agents],
        created_at=record.created_at,
        created_by=record.created_by,
    )
