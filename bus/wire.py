"""How messages sit in stream entries: one ``data`` field holding the JSON document.

External publishers use the same form, e.g.
``XADD runs.questions * data '{"api_key": "...", "question": "..."}'``.
"""

from __future__ import annotations

import json
from typing import cast

from pydantic import BaseModel, ValidationError

from bus.commands import Command
from bus.errors import MessageInvalid
from bus.readers import COMMAND

DATA_FIELD = "data"
_DATA_KEY = DATA_FIELD.encode()


def encode(message: BaseModel) -> str:
    """The stream field value for a message."""
    return message.model_dump_json(exclude_defaults=False)


def raw_data(fields: dict[bytes, bytes]) -> bytes:
    """The JSON document of a stream entry, or raise ``MessageInvalid``."""
    value = fields.get(_DATA_KEY)
    if value is None:
        raise MessageInvalid(f"stream entry has no {DATA_FIELD!r} field")
    return value


def decode_command(fields: dict[bytes, bytes]) -> Command:
    """Parse a role-stream entry into a ``Command``."""
    raw = raw_data(fields)
    try:
        return COMMAND.read_json(raw)
    except ValidationError as e:
        raise MessageInvalid(f"not a valid command: {_first_error(e)}") from e
    except ValueError as e:  # not JSON, or a version this reader cannot read
        raise MessageInvalid(f"not a valid command: {e}") from e


def loose_run_id(fields: dict[bytes, bytes]) -> tuple[str | None, str | None]:
    """Best-effort run id and tenant of an entry that failed to parse."""
    try:
        doc = json.loads(raw_data(fields))
    except (MessageInvalid, ValueError):
        return None, None
    if not isinstance(doc, dict):
        return None, None
    fields_doc = cast("dict[str, object]", doc)  # JSON: keys are strings
    run_id, tenant = fields_doc.get("run_id"), fields_doc.get("tenant_id")
    return (
        run_id if isinstance(run_id, str) and 0 < len(run_id) <= 64 else None,
        tenant if isinstance(tenant, str) else None,
    )


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(root)"
    return f"{where}: {err['msg']}"
