"""The teams' use cases, wired from the stores (None without the teams table's store)."""

from __future__ import annotations

from api.app.teams import TeamBook
from api.compose.settings import AppSettings
from api.compose.tool_names import server_tool_names
from bus.store import Stores


def team_book(settings: AppSettings, stores: Stores) -> TeamBook | None:
    """The teams' use cases: checked against the served models and the gateway's tools;
    gates allowed where paused runs have their checkpoint store."""
    if stores.teams is None:
        return None
    return TeamBook(
        stores.teams,
        stores.tenant_settings,
        models=settings.agents.served_models(),
        server_tools=server_tool_names(settings.gateway),
        gates=stores.checkpoints is not None,
    )
