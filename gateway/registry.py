"""The registry: every tool the gateway can run, with its schemas compiled once.

`ToolSpec` and `Risk` live in `gateway.spec`; a plugin that still imports them from here
loads, with a DeprecationWarning, until the next release.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, overload

from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from bus.moved import moved
from gateway import spec as _spec
from gateway.errors import RegistryError, UnknownTool
from gateway.ports import CallerAwareTool, Tool
from gateway.spec import ToolSpec as _ToolSpec


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    """A tool with its schemas compiled once, at registration."""

    tool: Tool
    input_validator: Validator
    output_validator: Validator

    @property
    def spec(self) -> _ToolSpec:
        """The tool's declaration."""
        return self.tool.spec


class ToolRegistry:
    """Every tool the gateway can run, by name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool.

        Raises:
            RegistryError: the name is already registered, the object is not a tool, or
                it takes an idempotency key without a ``run_as`` to receive it.
        """
        spec = getattr(tool, "spec", None)
        if not isinstance(spec, _ToolSpec):
            raise RegistryError(f"{tool!r} has no ToolSpec `spec`")
        if spec.name in self._tools:
            raise RegistryError(f"a tool named {spec.name!r} is already registered")
        if spec.takes_idempotency_key and not isinstance(tool, CallerAwareTool):
            # The key reaches a tool only through `run_as` (`Caller.idempotency_key`).
            raise RegistryError(f"{spec.name!r} takes an idempotency key but has no run_as")
        fmt = Draft202012Validator.FORMAT_CHECKER
        self._tools[spec.name] = RegisteredTool(
            tool=tool,
            input_validator=Draft202012Validator(spec.input_schema, format_checker=fmt),
            output_validator=Draft202012Validator(spec.output_schema, format_checker=fmt),
        )

    def plus(self, *tools: Tool) -> ToolRegistry:
        """A new registry with these tools added (this one's are shared, not compiled again).

        Raises:
            RegistryError: as `register`, e.g. a name already taken.
        """
        more = ToolRegistry()
        more._tools = dict(self._tools)
        for tool in tools:
            more.register(tool)
        return more

    def get(self, name: str) -> RegisteredTool:
        """The registered tool called `name`.

        Raises:
            UnknownTool: no tool has that name.
        """
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownTool(f"there is no tool named {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        """Registered tool names, sorted."""
        return sorted(self._tools)

    def tools(self) -> list[Tool]:
        """Every registered tool, sorted by name."""
        return [self._tools[n].tool for n in self.names()]

    def list(self) -> list[_ToolSpec]:
        """Every declaration, sorted by name."""
        return [self._tools[n].spec for n in self.names()]


_from_spec = moved(__name__, {"ToolSpec": "gateway.spec", "Risk": "gateway.spec"})


@overload
def __getattr__(name: Literal["ToolSpec"]) -> type[_ToolSpec]: ...
@overload
def __getattr__(name: Literal["Risk"]) -> type[_spec.Risk]: ...
def __getattr__(name: str) -> object:
    """The names that moved to `gateway.spec`, still importable from here for one release."""
    return _from_spec(name)
