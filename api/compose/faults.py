"""Fault injection for tests only: a worker process SIGKILLs itself at a named point.

The tests that prove "at most once" and "exactly once" need the process to die exactly
in the windows that matter, which random kills rarely hit:

| point | where the process dies |
|---|---|
| ``after_claim`` | the call is claimed (`gateway.once`), the tool has not run |
| ``after_tool`` | the tool returned, nothing of its outcome is checked or recorded |
| ``before_record`` | the outcome is final, not yet recorded under the call id |
| ``before_commit`` | every outcome of the batch is recorded; the step is not committed |
| ``after_summary`` | the intake stored a conversation's summary; its step is not committed |
| ``memory_before_commit`` | a memory step has its records (`agents.roles.remember`), uncommitted |
| ``after_run_end`` | the finalizer wrote the run's end and its turn's; the next is unpublished |
| ``after_handoff`` | the run-end hook published the next turn; the last step is uncommitted |

Nothing below the composition root imports this module: `api.compose.roles` passes
`fault` to the gateway (`gateway.ports.FaultPoint`, in `GatewayDeps`) and to the agents'
handlers (`agents.deps.FaultPoint`); built without it, each calls its inert `no_fault`.

Nothing here can fire by accident: the points are read once, at import, and only when
``AGENTBUS_TEST_FAULTS=1`` *and* ``AGENTBUS_FAULT_POINT`` (comma-separated points) are
both set; otherwise `fault` is one falsy check. These are not settings and are not
documented for operators: never set them outside a test. With them, optionally:

* ``AGENTBUS_FAULT_TOOL``: fire only for calls of this tool;
* ``AGENTBUS_FAULT_ONCE``: a file path; the first process to create it fires, no other
  (so the gateway started after the kill runs through);
* ``AGENTBUS_FAULT_CHANCE``: fire with this probability at each pass (chaos runs).
"""

from __future__ import annotations

import os
import random
import signal

import structlog

log = structlog.get_logger(__name__)

#: Every point a test may name.
POINTS = frozenset(
    {
        "after_claim",
        "after_tool",
        "before_record",
        "before_commit",
        "after_summary",
        "memory_before_commit",
        "after_run_end",
        "after_handoff",
    }
)


def _armed() -> frozenset[str]:
    if os.environ.get("AGENTBUS_TEST_FAULTS") != "1":
        return frozenset()
    named = {p.strip() for p in os.environ.get("AGENTBUS_FAULT_POINT", "").split(",")}
    unknown = named - POINTS - {""}
    if unknown:
        raise ValueError(f"unknown fault points {sorted(unknown)}; known: {sorted(POINTS)}")
    return frozenset(named & POINTS)


_ARMED = _armed()
_TOOL = os.environ.get("AGENTBUS_FAULT_TOOL", "") if _ARMED else ""
_ONCE = os.environ.get("AGENTBUS_FAULT_ONCE", "") if _ARMED else ""
_CHANCE = float(os.environ.get("AGENTBUS_FAULT_CHANCE", "1") or 1) if _ARMED else 0.0
if _ARMED:
    log.warning("test fault points armed: this process will SIGKILL itself", points=sorted(_ARMED))


def fault(point: str, *tools: str) -> None:
    """Die here (SIGKILL, no clean-up) if a test armed ``point`` (for one of ``tools``)."""
    if not _ARMED or point not in _ARMED:
        return
    if _TOOL and _TOOL not in tools:
        return
    if _CHANCE < 1 and random.random() >= _CHANCE:
        return
    if _ONCE:
        try:
            os.close(os.open(_ONCE, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    log.warning("test fault point reached: SIGKILL", point=point, tools=tools)
    os.kill(os.getpid(), signal.SIGKILL)
