"""HTTP's one table of the application's error kinds: every kind answered, headers kept."""

from __future__ import annotations

from api.app.errors import ApiError, Kind, RateLimited, SignatureExpired, Unauthorized
from api.http.error_kinds import STATUS, headers_of, status_of


def test_every_kind_has_a_status() -> None:
    assert set(STATUS) == set(Kind)


def test_a_missing_credential_gets_the_bearer_challenge_and_an_expired_signature_none() -> None:
    assert (status_of(Unauthorized("no key")), status_of(SignatureExpired("late"))) == (401, 401)
    assert headers_of(Unauthorized("no key")) == {"WWW-Authenticate": 'Bearer realm="agentbus"'}
    assert headers_of(SignatureExpired("late")) == {}


def test_an_error_that_says_when_to_retry_adds_retry_after() -> None:
    assert status_of(RateLimited("slow down", retry_after=7)) == 429
    assert headers_of(RateLimited("slow down", retry_after=7)) == {"Retry-After": "7"}
    assert headers_of(ApiError("broke")) == {}
    assert status_of(ApiError("broke")) == 500
