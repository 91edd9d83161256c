"""A command group's options are validated as typer validates them, and an option left
unset costs no validator."""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from api.cli.lazy_coercion import Group


def _group(seen: list[object], cls: type[TyperGroup] = Group) -> typer.Typer:
    """A group whose callback records its options' values and how each was coerced."""
    app = typer.Typer(cls=cls, add_completion=False)

    @app.callback()
    def root(  # pyright: ignore[reportUnusedFunction]
        ctx: typer.Context,
        limit: Annotated[int | None, typer.Option(min=1)] = None,
        tag: Annotated[list[str] | None, typer.Option()] = None,
    ) -> None:
        coercions = {p.name: type(p._runtime_param).__name__ for p in ctx.command.params}  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
        seen.extend([limit, tag, coercions])

    @app.command()
    def show() -> None:  # pyright: ignore[reportUnusedFunction]
        """Show."""

    return app


def test_a_given_option_is_coerced_and_checked_as_typer_does() -> None:
    seen: list[object] = []
    app = _group(seen)
    typers = _group([], cls=TyperGroup)

    ok = CliRunner().invoke(app, ["--limit", "3", "--tag", "a", "--tag", "b", "show"])

    assert ok.exit_code == 0, ok.output
    assert seen[:2] == [3, ["a", "b"]]
    assert seen[2] == {"limit": "AdapterRuntimeParam", "tag": "AdapterRuntimeParam"}
    for bad in (["--limit", "0", "show"], ["--limit", "many", "show"]):
        refused = CliRunner().invoke(app, bad)
        assert refused.exit_code == 2
        assert refused.output == CliRunner().invoke(typers, bad).output
        assert "limit" in refused.output


def test_an_unset_option_is_none_and_builds_no_validator() -> None:
    seen: list[object] = []

    result = CliRunner().invoke(_group(seen), ["show"])

    assert result.exit_code == 0, result.output
    assert seen == [None, None, {"limit": "_Deferred", "tag": "_Deferred"}]
