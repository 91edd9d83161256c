"""What the A2A server's methods call (``api.http.routes.a2a`` and the ``a2a_*`` modules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from api.app.access import RunAccess
    from api.app.auth import Authenticator
    from api.app.gate_actions import Gates
    from api.app.ports import CancelRun
    from api.app.run_follow import RunFollower
    from api.app.starter import RunStarter
    from api.http.use_cases import UseCases
    from gateway.webhooks.push_configs import PushConfigs


@dataclass(frozen=True, kw_only=True)
class A2aUses:
    """The use cases the A2A JSON-RPC methods call.

    Attributes:
        auth: turns the request's key into the caller.
        starter: starts the runs ``SendMessage`` asks.
        access: which runs (tasks) the caller may see or change.
        follower: follows a task's events, and reads those so far.
        gates: resumes paused tasks (a decision sent as a message).
        cancel: asks a run to stop (``CancelTask``).
        push_configs: the tasks' push notification configs (None: A2A offers no push).
    """

    auth: Authenticator
    starter: RunStarter
    access: RunAccess
    follower: RunFollower
    gates: Gates
    cancel: CancelRun
    push_configs: PushConfigs | None

    @classmethod
    def of(cls, deps: UseCases) -> A2aUses:
        """Picked from what the composition root built."""
        return cls(
            auth=deps.auth,
            starter=deps.starter,
            access=deps.access,
            follower=deps.follower,
            gates=deps.gates,
            cancel=deps.cancel,
            push_configs=deps.push_configs,
        )
