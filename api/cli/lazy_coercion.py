"""A parameter's validator is built when a value comes to validate, not before.

typer (0.29) coerces every parameter it processes through a pydantic ``TypeAdapter`` that it
builds the first time the parameter is processed, even when the value is ``None`` (the
parameter was not given), which needs no validation at all. ``agentbus runs resume --help``
processes the unset ``--help`` of the root and of ``runs`` before its own, so each ``--help``
imported pydantic and built three adapters: about 0.1 s of CPU, two thirds of the command.
Here each typer parameter gets a stand-in that answers an unset value itself and builds
typer's own coercion, once, for the first value there is; a given value is validated exactly
as typer validates it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from typer import _click as click  # pyright: ignore[reportPrivateUsage]
from typer._coercion import (  # pyright: ignore[reportPrivateUsage]
    RuntimeParam,
    build_runtime_param,
)
from typer.core import TyperGroup, _TyperParameter  # pyright: ignore[reportPrivateUsage]


@dataclass(frozen=True)
class _Deferred(RuntimeParam):
    """typer's coercion of one parameter, built on the first value that is not ``None``."""

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: click.Context) -> Any:
        # RuntimeParam.coerce has already answered None (and a missing multi-value) itself.
        real = build_runtime_param(param.type_descriptor)
        param._runtime_param = real  # pyright: ignore[reportPrivateUsage]
        return real.coerce(value, param=param, ctx=ctx)


def defer_params(params: list[click.Parameter]) -> None:
    """Give each typer parameter of ``params`` that has no coercion yet a deferred one."""
    for param in params:
        if isinstance(param, _TyperParameter) and param._runtime_param is None:  # pyright: ignore[reportPrivateUsage]
            descriptor = param.type_descriptor
            param._runtime_param = _Deferred(  # pyright: ignore[reportPrivateUsage]
                parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
            )


class Group(TyperGroup):
    """A typer group whose parameters, ``--help`` included, get their validators when used.

    Every command group (the root and each ``typer.Typer`` of ``api/cli``) is one of these.
    """

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """typer's parameters, each with a deferred coercion."""
        params = super().get_params(ctx)
        defer_params(params)
        return params
