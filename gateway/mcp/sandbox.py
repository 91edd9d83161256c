"""A stdio MCP server's sandbox: bubblewrap, a clean environment and resource limits.

The server is started as ``bwrap ... -- [setpriv ...] prlimit ... -- COMMAND``:

* **files**: ``/usr`` and the ``/bin``/``/lib*`` links, a few files of ``/etc``, and the
  gateway's Python (``sys.prefix`` and ``sys.base_prefix``) read-only; the command itself
  when it lives elsewhere; the config's ``read_paths`` (read-only) and ``write_paths``; a
  private empty ``/tmp``. The data folder, the state store's file and the signing keys are
  never bound, and are hidden (an empty tmpfs, or ``/dev/null`` for a file) when a granted
  path contains them.
* **environment**: only ``PATH``, ``HOME=/tmp``, ``LANG`` and the config's ``env``: no
  ``AGENTBUS_*`` secret, no database URL.
* **network**: its own namespace with only a loopback (``--unshare-net``), always. When
  the config grants hosts, the gateway's egress proxy for this server (a unix socket,
  `gateway.mcp.egress_proxy`) is bound in, and a relay (`gateway.mcp.egress_relay`)
  offers it on that loopback as ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``: the server
  reaches the granted hosts on the granted ports, through the SSRF guard, and nothing else.
* **processes**: ``--die-with-parent``, ``--new-session`` (no terminal injection), its own
  PID namespace; ``prlimit`` sets RLIMIT_AS, RLIMIT_CPU and RLIMIT_NPROC. A gateway running
  as root first drops to ``nobody`` with ``setpriv`` (with every capability gone), because
  the kernel never applies RLIMIT_NPROC to root: a fork bomb then stops at the limit.

Without ``bwrap`` on PATH a stdio server is not started (``McpSandboxUnavailable``) unless
its config says ``unsandboxed``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gateway.errors import McpSandboxUnavailable
from gateway.mcp_config.servers import McpServerConfig

#: The unprivileged user a root gateway's servers run as.
NOBODY = 65534
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = (
    "/etc/ld.so.cache",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
)
_PATH = "/usr/local/bin:/usr/bin:/bin"
#: Where the egress proxy's socket and the relay appear inside the sandbox.
PROXY_SOCKET = "/run/agentbus/egress.sock"
RELAY = "/run/agentbus/egress_relay.py"
_RELAY_SOURCE = str(Path(__file__).resolve().with_name("egress_relay.py"))


@dataclass(frozen=True)
class Launch:
    """How to start one stdio server: the argv and its whole environment."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool


def find_bwrap() -> str | None:
    """The ``bwrap`` executable on PATH (or in the system's folders), or None."""
    return shutil.which("bwrap") or shutil.which("bwrap", path=_PATH)


def launch_for(
    config: McpServerConfig,
    *,
    hidden: Sequence[Path] = (),
    bwrap: str | None = None,
    proxy: Path | None = None,
) -> Launch:
    """The sandboxed (or, when the config says so, plain) start of ``config``'s server.

    Args:
        config: a stdio server (``command`` set).
        hidden: paths the server must never see (the data folder, the store's file).
        bwrap: the bubblewrap executable; None when it is missing.
        proxy: the socket of the server's egress proxy; needed when it is granted hosts.

    Raises:
        McpSandboxUnavailable: no bubblewrap, and the server is not ``unsandboxed``.
    """
    assert config.command is not None
    env = {"PATH": _PATH, "HOME": "/tmp", "LANG": "C.UTF-8", **config.env}
    if config.unsandboxed:
        return Launch(list(config.command), env, sandboxed=False)
    if bwrap is None:
        raise McpSandboxUnavailable(
            f"the MCP server {config.name!r} needs bubblewrap (bwrap) to run sandboxed, "
            "and it is not installed"
        )
    argv = [bwrap, *_isolation(), *_binds(config, hidden)]
    relay: list[str] = []
    if config.sandbox.hosts:
        assert proxy is not None, "a server granted hosts needs its egress proxy"
        argv += ["--ro-bind", _RELAY_SOURCE, RELAY, "--bind", str(proxy), PROXY_SOCKET]
        relay = [sys.executable, "-I", "-S", RELAY, PROXY_SOCKET, "--"]
    argv += ["--chdir", "/tmp", "--"]
    return Launch([*argv, *_limits(config), *relay, *config.command], env, sandboxed=True)


def _isolation() -> list[str]:
    # --unshare-all less the user namespace: a root gateway's user namespace would map the
    # server's user to root outside, which RLIMIT_NPROC never limits (setpriv drops it to
    # nobody instead); an unprivileged bwrap makes one of its own anyway. The network is
    # never shared: granted hosts are reached through the egress proxy only.
    flags = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    flags += ["--unshare-net", "--die-with-parent", "--new-session"]
    return [*flags, "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]


def _binds(config: McpServerConfig, hidden: Sequence[Path]) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for link in _SYSTEM_LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    readable = _outermost(
        [sys.prefix, sys.base_prefix, *_command_file(config), *config.sandbox.read_paths]
    )
    writable = _outermost(config.sandbox.write_paths)
    # The folders leading to each mount are made here, readable by all: bwrap would make
    # them with the gateway's umask, and a server running as nobody could not pass them.
    for parent in _parents([*_ETC, *readable, *writable, PROXY_SOCKET]):
        args += ["--perms", "0755", "--dir", parent]
    for etc in _ETC:
        args += ["--ro-bind-try", etc, etc]
    for path in readable:
        args += ["--ro-bind-try", path, path]
    # After the read-only ones: a writable path inside a readable one is mounted over it.
    for path in writable:
        args += ["--bind-try", path, path]
    granted = [Path(p).resolve() for p in (*readable, *config.sandbox.write_paths)]
    for secret in hidden:
        secret = secret.resolve()
        if not any(secret == g or g in secret.parents for g in granted):
            continue  # never bound, so never seen
        if secret.is_dir():
            args += ["--tmpfs", str(secret)]
        elif secret.exists():
            args += ["--ro-bind", "/dev/null", str(secret)]
    return args


def _command_file(config: McpServerConfig) -> list[str]:
    """The command's executable (and where a link to it points), unless under /usr."""
    assert config.command is not None
    found = shutil.which(config.command[0], path=os.environ.get("PATH", _PATH))
    if found is None:
        return []
    files = [os.path.abspath(found), os.path.realpath(found)]
    return [f for f in files if not f.startswith("/usr/")]


def _limits(config: McpServerConfig) -> list[str]:
    box = config.sandbox
    drop: list[str] = []
    if os.geteuid() == 0:
        drop = [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]
    limits = [
        "prlimit",
        f"--as={box.memory_mb * 1024 * 1024}",
        f"--cpu={box.cpu_s}",
        f"--nproc={box.max_processes}",
        "--",
    ]
    return [*drop, *limits]


def _parents(paths: Iterable[str]) -> list[str]:
    """Every folder above these paths, outermost first (not ``/`` nor ``/usr``)."""
    found: set[str] = set()
    for path in paths:
        found.update(str(p) for p in Path(path).parents if str(p) not in ("/", "/usr"))
    return sorted(found, key=lambda p: (p.count("/"), p))


def _outermost(paths: Iterable[str]) -> list[str]:
    """The paths without those inside another of them (a bind of a parent made after its
    child's would hide the child's, and a file cannot be bound into a read-only folder)."""
    unique = sorted({os.path.normpath(p) for p in paths if p}, key=lambda p: (p.count("/"), p))
    kept: list[str] = []
    for path in unique:
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept
