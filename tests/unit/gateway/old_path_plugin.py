"""A plugin written against the import path of the previous release (gateway.registry)."""

from __future__ import annotations

from typing import Any

from gateway.registry import Risk, ToolSpec  # pyright: ignore[reportAttributeAccessIssue]


class Echo:
    """Returns its text."""

    spec = ToolSpec(
        name="echo_old_path",
        description="Echo the text.",
        risk=Risk.LOW,
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        output_schema={"type": "object"},
    )

    async def run(self, args: dict[str, Any], net: Any) -> dict[str, Any]:
        return {"text": args.get("text", "")}


def tools() -> list[Echo]:
    return [Echo()]
