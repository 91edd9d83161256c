"""Commands a process published, kept in hand so it need not decode them when it reads them.

When the step that follows runs in the same process (``agentbus up``, or any worker whose
next role it also serves), its entry is read back as the very bytes this process just
encoded from a `Command` its own handler built. Validating those bytes again (pydantic's
``model_validate_json`` of the whole run state, ~8% of a multi-mode run's CPU) checks
nothing new: the entry's ``data`` is looked up here, byte for byte, and the command that
encoded to it is used as it is. Anything else (another process's entries, a redelivery
after the command left this table, a publisher outside the runtime) is decoded and
validated as before. The entry is still read with ``XREADGROUP``, acked by its step's
commit and reclaimed if this process dies: only the decoding is skipped.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bus.commands import Command

_BY_CLIENT: weakref.WeakKeyDictionary[Any, Handoff] = weakref.WeakKeyDictionary()


def handoff_for(redis: Any) -> Handoff:
    """The table of commands published through ``redis`` by this process."""
    table = _BY_CLIENT.get(redis)
    if table is None:
        table = _BY_CLIENT[redis] = Handoff()
    return table


class Handoff:
    """Recently published commands by their encoded bytes, oldest dropped past ``limit``.

    Args:
        limit: how many are kept (each holds its command; ~1,000 × a few KB).
    """

    def __init__(self, limit: int = 1024) -> None:
        self._limit = limit
        self._by_data: OrderedDict[bytes, Command] = OrderedDict()

    def put(self, data: bytes, command: Command) -> None:
        """Remember that ``command`` encoded to ``data``."""
        self._by_data[data] = command
        if len(self._by_data) > self._limit:
            self._by_data.popitem(last=False)

    def take(self, data: bytes) -> Command | None:
        """The command that encoded to ``data`` (once), or None."""
        return self._by_data.pop(data, None)
