"""How a tenant's MCP server is reached, and what the gateway lets its tools do."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from gateway.errors import ConfigInvalid
from gateway.mcp_config.grants import parse_grants
from gateway.spec import Risk


class McpSandbox(BaseModel):
    """What a stdio server may reach inside its sandbox (``gateway.mcp.sandbox``).

    Nothing is granted by default: the system's programs and libraries and the gateway's
    Python are readable, ``/tmp`` is private and empty, there is no network, and the data
    folder, the store and the gateway's environment are out of reach.

    Attributes:
        read_paths: absolute paths the server may read (its own code, say).
        write_paths: absolute paths the server may read and write.
        hosts: what the server may reach, each ``HOST`` (ports 443 and 80) or
            ``HOST:PORT``, through the gateway's egress proxy and the SSRF guard
            (`gateway.mcp_config.grants`); nothing else is reachable from the sandbox.
        memory_mb: address-space limit of each of its processes (RLIMIT_AS).
        cpu_s: CPU seconds each of its processes may use (RLIMIT_CPU).
        max_processes: processes (and threads) it may run at once (RLIMIT_NPROC).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    read_paths: tuple[str, ...] = ()
    write_paths: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    memory_mb: int = Field(default=2048, ge=64, le=1_048_576)
    cpu_s: int = Field(default=600, ge=1, le=86_400)
    max_processes: int = Field(default=64, ge=1, le=4096)

    @model_validator(mode="after")
    def _absolute(self) -> Self:
        for path in (*self.read_paths, *self.write_paths):
            if not path.startswith("/") or "\x00" in path:
                raise ValueError(f"sandbox paths are absolute: {path!r}")
        parse_grants(self.hosts)  # a ValueError names the entry
        return self


class McpServerConfig(BaseModel):
    """One MCP server: exactly one of `command` (stdio) or `url` (streamable HTTP).

    Attributes:
        name: short name; its tools are registered as ``<name>__<tool>``.
        command: argv of a stdio server, started as a child process of the gateway.
        env: extra environment for the stdio server (only PATH, HOME and a few basics are
            inherited, so the gateway's own secrets never reach it).
        url: an http(s) URL of a streamable-HTTP server; the SSRF guard checks it and the
            connection goes to the checked address.
        headers: headers sent to the HTTP server (an API key, say); never logged.
        risk: the risk level of every tool of the server (HIGH unless said otherwise).
        timeout_s: the time limit of one call.
        max_output_bytes: results larger than this are cut and marked truncated.
        tools: only these server tools are exposed; None exposes all of them.
        sandbox: what a stdio server may reach in its bubblewrap sandbox.
        unsandboxed: run a stdio server without the sandbox, with the gateway's rights (an
            operator's choice, logged at start and recorded with each call in the audit).
        idempotency_key_arg: the argument through which this server's tools take the
            gateway's idempotency key. A tool whose input schema has a property of that
            name takes a key: the gateway hides the property from the model, fills it
            in on every call (the same key on every delivery) and may run a call again
            with it when its first outcome was lost (see `gateway.once`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,23}$")
    command: tuple[str, ...] | None = Field(default=None, min_length=1)
    env: dict[str, str] = {}
    url: str | None = Field(default=None, pattern=r"^https?://")
    headers: dict[str, str] = Field(default={}, repr=False)
    risk: Risk = Risk.HIGH
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    max_output_bytes: int = Field(default=65_536, ge=256)
    tools: frozenset[str] | None = None
    idempotency_key_arg: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
    sandbox: McpSandbox = McpSandbox()
    unsandboxed: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (stdio) or url (streamable HTTP)")
        if self.url is not None and (self.unsandboxed or self.sandbox != McpSandbox()):
            raise ValueError("sandbox and unsandboxed are for stdio servers (command)")
        return self

    @property
    def key(self) -> str:
        """A digest of everything about the server; equal configs share one connection."""
        doc = self.model_dump(mode="json")
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]

    @property
    def where(self) -> str:
        """The command or URL, for messages (headers and env are left out)."""
        return " ".join(self.command) if self.command else str(self.url)


_SERVERS: TypeAdapter[list[McpServerConfig]] = TypeAdapter(list[McpServerConfig])


def parse_servers(text: str) -> tuple[McpServerConfig, ...]:
    """Servers from JSON text (the ``AGENTBUS_MCP_SERVERS`` setting); empty text is none.

    Raises:
        ConfigInvalid: the text is not a JSON list of valid servers, or names repeat.
    """
    if not text.strip():
        return ()
    try:
        raw: Any = json.loads(text)
        servers = tuple(_SERVERS.validate_python(raw))
    except (ValueError, ValidationError) as e:
        raise ConfigInvalid(f"AGENTBUS_MCP_SERVERS is not valid: {e}") from e
    names = [s.name for s in servers]
    if len(names) != len(set(names)):
        raise ConfigInvalid("AGENTBUS_MCP_SERVERS names a server twice")
    return servers
