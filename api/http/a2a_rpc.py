"""A2A's JSON-RPC envelope: what a call must look like, and the error answers with A2A's codes.

A call is checked before anything else is done with it, in JSON-RPC 2.0's order: a body that
is not JSON is -32700; one that is not a request object (not an object, ``jsonrpc`` not
``"2.0"``, ``method`` missing or not a string, an ``id`` other than a string, an integer or
null) is -32600; a method nobody serves is -32601. The ``id`` is echoed whenever it could be
read, and is null otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeGuard, TypeVar

from fastapi.responses import JSONResponse, Response
from google.protobuf import json_format
from google.protobuf.message import Message as Proto

from bus.json_values import is_object

#: JSON-RPC's and A2A's error codes (A2A 1.0, section 5.4).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004

_ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
_M = TypeVar("_M", bound=Proto)


class RpcError(Exception):
    """A JSON-RPC error answer (A2A's codes)."""

    def __init__(
        self,
        code: int,
        message: str,
        data: dict[str, Any] | None = None,
        *,
        call_id: str | int | None = None,
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data
        self.call_id = call_id  # set by an envelope error whose id could be read


@dataclass(frozen=True, slots=True)
class Call:
    """A well-formed JSON-RPC request: its id, method name and params (not yet checked)."""

    id: str | int | None
    method: str
    params: object


def read_call(body: bytes) -> Call:
    """The call in ``body``, or ``RpcError`` (-32700, -32600) saying what is wrong with it.

    The error carries the id when it could be read, so the answer echoes it.
    """
    try:
        doc: object = json.loads(body)
    except ValueError as e:  # not JSON, or not UTF-8 (UnicodeDecodeError) at all
        raise RpcError(PARSE_ERROR, "the body is not JSON") from e
    if not is_object(doc):
        raise RpcError(INVALID_REQUEST, "a request is a JSON object (batches are not served)")
    call_id = doc.get("id")
    if not _valid_id(call_id):
        raise RpcError(INVALID_REQUEST, "id: a string, an integer or null")
    if doc.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'jsonrpc: must be "2.0"', call_id=call_id)
    method = doc.get("method")
    if not isinstance(method, str) or not method:
        raise RpcError(INVALID_REQUEST, "method: a non-empty string is required", call_id=call_id)
    params: object = doc.get("params")
    return Call(call_id, method, {} if params is None else params)


def parse_params(params: object, into: _M) -> _M:
    """``params`` read into the method's request message, or -32602 saying what is wrong.

    Fields A2A does not define are ignored (a newer client may send more).
    """
    if not is_object(params):
        raise RpcError(INVALID_PARAMS, "params must be an object")
    try:
        return json_format.ParseDict(params, into, ignore_unknown_fields=True)
    except json_format.ParseError as e:
        raise RpcError(INVALID_PARAMS, f"params: {e}") from e


def _valid_id(value: object) -> TypeGuard[str | int | None]:
    # JSON-RPC 2.0: a String, a Number without a fraction, or Null; never a bool (an int to
    # Python), an object or an array.
    return value is None or isinstance(value, str) or type(value) is int


def error_answer(call_id: object, e: RpcError, status: int = 200) -> Response:
    """The JSON-RPC answer for ``e`` (the API's own code, if any, in A2A 1.0's ErrorInfo)."""
    error: dict[str, Any] = {"code": e.code, "message": e.message}
    if e.data:
        error["data"] = error_info(e.data)
    return JSONResponse({"jsonrpc": "2.0", "id": call_id, "error": error}, status)


def error_info(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A2A 1.0's error details: a google.rpc.ErrorInfo with the API's code in its metadata."""
    meta = {k: str(v) for k, v in data.items()}
    reason = str(data.get("code", "error")).upper()
    return [{"@type": _ERROR_INFO_TYPE, "reason": reason, "domain": "agentbus", "metadata": meta}]
