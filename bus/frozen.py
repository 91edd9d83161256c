"""The base of every message model."""

from __future__ import annotations

# Declared with the wire models (bus/contracts): the requests a client sends are messages too.
from agentbus_contracts.base import Frozen as Frozen
