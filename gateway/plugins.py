"""Tools a deployment adds: ``AGENTBUS_TOOL_PLUGINS="package.module:factory,..."``.

Each factory is called once, with no arguments, when a gateway (or any process that lists
tools) starts; it returns one tool or an iterable of tools (objects with a `ToolSpec`
``spec`` and an async ``run(args, net)``, see `gateway.ports.Tool`). Plugin tools run under
the same chain as the built-ins: declare honest risk, hosts and side effects.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any, TypeGuard

from gateway.errors import ConfigInvalid
from gateway.ports import Tool


def load_plugin(entry: str) -> list[Tool]:
    """The tools one ``module:factory`` entry provides.

    Raises:
        ConfigInvalid: the entry is malformed, does not import, or returns no tools.
    """
    module_name, sep, attr = entry.strip().partition(":")
    if not sep or not module_name or not attr:
        raise ConfigInvalid(f"tool plugin {entry!r} is not 'module:factory'")
    try:
        factory: Any = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigInvalid(f"tool plugin {entry!r} cannot be loaded: {e}") from e
    if not callable(factory):
        raise ConfigInvalid(f"tool plugin {entry!r} is not callable")
    made: Any = factory()
    tools: list[Any] = [made] if isinstance(made, Tool) else list(_iterable(entry, made))
    for tool in tools:
        if not isinstance(tool, Tool):
            raise ConfigInvalid(f"tool plugin {entry!r} returned {tool!r}, which is not a tool")
    return tools


def _iterable(entry: str, made: Any) -> Iterable[Any]:
    if not _is_iterable(made):
        raise ConfigInvalid(f"tool plugin {entry!r} returned neither a tool nor tools")
    return made


def _is_iterable(value: object) -> TypeGuard[Iterable[Any]]:
    return isinstance(value, Iterable)


def load_plugins(entries: str) -> list[Tool]:
    """Every tool of a comma-separated list of entries (empty text: none)."""
    return [tool for entry in entries.split(",") if entry.strip() for tool in load_plugin(entry)]
