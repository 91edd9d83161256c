"""Errors of the composition root: a setting that cannot be wired, a role this build lacks.

Kept apart from `api.compose.roles` so that a command raising one (``agentbus retention``,
``erase``, ``audit``) does not import every role to do so.
"""

from __future__ import annotations

from bus.errors import BusError


class UnknownRole(BusError):
    """A worker was asked for a role this build has no handler for."""

    code = "unknown_role"


class ConfigError(BusError):
    """A setting is missing or inconsistent."""

    code = "config_error"
