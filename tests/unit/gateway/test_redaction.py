"""Deep redaction of secret-looking keys and values."""

from __future__ import annotations

import pytest

from gateway.redact import REDACTED, is_secret_key, redact


@pytest.mark.parametrize(
    "key",
    [
        "authorization", "Authorization", "proxy-authorization", "token", "access_token",
        "refresh_token", "accessToken", "X-Auth-Token", "id_token", "api_key", "apikey",
        "apiKey", "API-KEY", "x-api-key", "X_API_KEY", "password", "db_password", "passwd",
        "secret", "client_secret", "clientSecret", "cookie", "Set-Cookie", "bearer",
        "session", "sessionId", "private_key", "privateKey", "credentials", "auth", "pwd",
    ],
)  # fmt: skip
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key", ["text", "query", "url", "max_tokens", "author", "expression", "timezone", "count"]
)
def test_ordinary_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_redacts_deeply_and_leaves_the_input_alone() -> None:
    headers = {"Authorization": "Bearer abc", "Accept": "text/html", "X-Api-Key": "k"}
    payload = {
        "query": "weather",
        "headers": headers,
        "items": [{"password": "p", "name": "n"}, ("a", {"client_secret": {"nested": 1}})],
        "session": ["s1", "s2"],
        "max_tokens": 100,
    }
    out = redact(payload)
    assert out == {
        "query": "weather",
        "headers": {"Authorization": REDACTED, "Accept": "text/html", "X-Api-Key": REDACTED},
        "items": [{"password": REDACTED, "name": "n"}, ["a", {"client_secret": REDACTED}]],
        "session": REDACTED,
        "max_tokens": 100,
    }
    assert headers["Authorization"] == "Bearer abc"


def test_credential_values_are_redacted_whatever_the_key() -> None:
    out = redact({"header": "Bearer eyJhbGciOi", "h2": "Basic dXNlcjpwYXNz", "n": "Bearer"})
    assert out == {"header": REDACTED, "h2": REDACTED, "n": "Bearer"}


def test_credentials_inside_urls_are_redacted() -> None:
    out = redact(
        {
            "url": "https://example.com/a?q=1&api_key=SECRET&token=T2",
            "u2": "https://user:pw@example.com:8443/x",
            "plain": "https://example.com/?q=tokens",
        }
    )
    assert "SECRET" not in out["url"] and "T2" not in out["url"]
    assert "q=1" in out["url"]
    assert out["u2"] == "https://[REDACTED]@example.com:8443/x"
    assert out["plain"] == "https://example.com/?q=tokens"


def test_hostile_nesting_is_cut_not_walked() -> None:
    deep: object = "leaf"
    for _ in range(500):
        deep = [deep]
    assert "[TRUNCATED]" in repr(redact(deep))


def test_scalars_pass_through() -> None:
    assert redact(5) == 5 and redact(None) is None and redact("hello") == "hello"
