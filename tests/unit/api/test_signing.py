"""Signing secrets: derived per key from the deployment's master key, never stored."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from pydantic import SecretStr

from api import credentials, signing
from api.app.auth import Authenticator
from api.app.errors import Unauthorized
from bus.store import ApiKeyRecord, KeyRole

MASTER = b"m" * 32


def test_each_key_and_each_master_give_another_secret() -> None:
    one = signing.signing_secret(MASTER, "0123456789ab")
    assert one == signing.signing_secret(MASTER, "0123456789ab")
    assert one != signing.signing_secret(MASTER, "0123456789ac")
    assert one != signing.signing_secret(b"n" * 32, "0123456789ab")
    assert one.startswith(signing.SECRET_PREFIX)


@pytest.mark.parametrize(
    ("data", "signature", "ok"),
    [
        (b'{"q": 1}', None, True),
        (b'{"q": 2}', None, False),  # other bytes
        (b'{"q": 1}', "not hex", False),
        (b'{"q": 1}', "0" * 64, False),
    ],
)
def test_a_signature_covers_the_exact_bytes(data: bytes, signature: str | None, ok: bool) -> None:
    secret = signing.signing_secret(MASTER, "0123456789ab")
    made = signing.sign(secret, b'{"q": 1}')
    assert signing.verify(secret, data, signature or made) is ok


def test_the_master_key_file_is_private_and_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = signing.master_key(None, data_dir)
    assert first == signing.master_key(None, data_dir) and len(first) >= 32
    mode = (tmp_path / "data" / signing.MASTER_FILE).stat().st_mode
    assert stat.S_IMODE(mode) == 0o600


def test_a_configured_master_key_wins_and_must_be_long_enough(tmp_path: Path) -> None:
    assert signing.master_key(SecretStr("k" * 40), tmp_path) == b"k" * 40
    assert not (tmp_path / signing.MASTER_FILE).exists()
    with pytest.raises(signing.SigningKeyInvalid, match="32"):
        signing.master_key(SecretStr("short"), tmp_path)


class FakeKeys:
    def __init__(self, *records: ApiKeyRecord) -> None:
        self.records = {r.id: r for r in records}

    async def get(self, key_id: str) -> ApiKeyRecord | None:
        return self.records.get(key_id)


async def test_a_signed_principal_carries_the_keys_tenant_subject_and_groups() -> None:
    minted = credentials.mint("t1", "crm", KeyRole.USER, groups=("sales", "finance"))
    kid = minted.record.id
    auth = Authenticator(FakeKeys(minted.record), signing_master=MASTER)  # type: ignore[arg-type]
    data = b'{"question": "q"}'
    signature = signing.sign(signing.signing_secret(MASTER, kid), data)

    who = await auth.authenticate_signed(kid, data, signature)

    assert (who.tenant_id, who.subject, who.groups) == ("t1", "crm", ("finance", "sales"))
    with pytest.raises(Unauthorized):
        await auth.authenticate_signed(kid, data + b" ", signature)
    with pytest.raises(Unauthorized):  # no master key: signed questions are off
        await Authenticator(FakeKeys(minted.record)).authenticate_signed(kid, data, signature)  # type: ignore[arg-type]
