"""The ids and names a request carries, as the server checks them: a run's, a conversation's,
a team's, a tool's, a caller's, and the largest message id."""

from __future__ import annotations

import uuid

#: A run's or a conversation's id.
RUN_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
#: A subject, a group, a key's name.
NAME_PATTERN = r"^[A-Za-z0-9_.@:-]{1,128}$"
#: A team's and a declared agent's name.
TEAM_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"
#: A tool's name (registry names, MCP tools as server.tool are mapped to this too).
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
#: The largest message id the id column holds (a 64-bit integer on SQLite and Postgres): a
#: larger one names no message, and the database would refuse to compare with it.
MAX_MESSAGE_ID = 2**63 - 1


def new_run_id() -> str:
    """A fresh, URL-safe run id."""
    return uuid.uuid4().hex
