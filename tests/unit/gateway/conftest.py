"""Fixtures for gateway tests (the helpers live in local_http)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.egress.client import HttpEgressClient
from gateway.egress.policy import EgressPolicy
from tests.unit.gateway.local_http import OVERRIDE, PUBLIC_IP, FakeResolver, LocalServer, serve


@pytest.fixture
def server() -> Iterator[LocalServer]:
    """A plain-HTTP local server."""
    yield from serve(LocalServer(), None)


@pytest.fixture(scope="session")
def cert_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for ``secure.test`` (made with the openssl CLI)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
         "-subj", "/CN=secure.test", "-addext", "subjectAltName=DNS:secure.test"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_server(cert_files: tuple[Path, Path]) -> Iterator[LocalServer]:
    """An HTTPS local server for ``secure.test`` that records the SNI name it was sent."""
    cert, key = cert_files
    state = LocalServer()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.sni_callback = lambda _sock, name, _ctx: state.sni.append(name)
    yield from serve(state, ctx)


@pytest.fixture
def client_tls(cert_files: tuple[Path, Path]) -> ssl.SSLContext:
    """A client context that trusts only the test certificate."""
    return ssl.create_default_context(cafile=str(cert_files[0]))


@pytest.fixture
def resolver() -> FakeResolver:
    """Resolves the usual test names to PUBLIC_IP; tests add their own."""
    names = ("site.test", "other.test", "secure.test", "html.duckduckgo.com", "a.test", "b.test")
    return FakeResolver({n: [PUBLIC_IP] for n in names})


@pytest.fixture
def make_client(resolver: FakeResolver) -> Callable[..., HttpEgressClient]:
    """Build an egress client using the fake resolver and the loopback connect override."""

    def make(policy: EgressPolicy | None = None, **kwargs: Any) -> HttpEgressClient:
        kwargs.setdefault("resolver", resolver)
        kwargs.setdefault("connect_override", OVERRIDE)
        kwargs.setdefault("timeout_s", 5.0)
        return HttpEgressClient(
            policy or EgressPolicy(enabled=True, allowed_hosts=frozenset({"*"})), **kwargs
        )

    return make
