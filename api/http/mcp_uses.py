"""What the MCP server's tools and task methods call (``api.http.mcp_tools``, ``mcp_tasks``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from api.app.access import RunAccess
    from api.app.auth import Authenticator
    from api.app.doc_search import DocSearch
    from api.app.gate_actions import Gates
    from api.app.ports import CancelRun
    from api.app.run_follow import RunFollower
    from api.app.starter import RunStarter
    from api.http.use_cases import UseCases
    from api.settings import ApiSettings


@dataclass(frozen=True, kw_only=True)
class McpUses:
    """The use cases the MCP endpoint calls.

    Attributes:
        settings: the API's settings (the Host and Origin guard).
        auth: turns the request's key into the caller.
        starter: starts the runs ``ask`` asks.
        access: which runs the caller may see or change.
        follower: follows a run's events, and reads those so far.
        gates: resumes paused runs (``decide``).
        cancel: asks a run to stop (``tasks/cancel``, a cancelled tool call).
        doc_search: searches the caller's documents (``search_docs``).
        run_ttl_s: how long a run's keys live (a task's ``ttl``).
    """

    settings: ApiSettings
    auth: Authenticator
    starter: RunStarter
    access: RunAccess
    follower: RunFollower
    gates: Gates
    cancel: CancelRun
    doc_search: DocSearch
    run_ttl_s: int

    @classmethod
    def of(cls, deps: UseCases) -> McpUses:
        """Picked from what the composition root built."""
        return cls(
            settings=deps.settings,
            auth=deps.auth,
            starter=deps.starter,
            access=deps.access,
            follower=deps.follower,
            gates=deps.gates,
            cancel=deps.cancel,
            doc_search=deps.doc_search,
            run_ttl_s=deps.run_ttl_s,
        )
