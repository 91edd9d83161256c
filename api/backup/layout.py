"""Where the embedded defaults keep their data, from the settings: what a backup covers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from api.app.erasure_ledger import LEDGER_FILE
from api.backup.errors import NotEmbedded
from api.compose.local_key import LOCAL_KEY_FILE
from api.compose.settings import AppSettings
from api.signing import MASTER_FILE
from bus import embedded
from bus.store.sqlite_backup import sqlite_file
from retrieval.stack import qdrant_path

#: Files of the data folder kept with the store: the signing key derives every API key's
#: signing secret, and the local key is a key the store knows.
SECRET_FILES = (MASTER_FILE, LOCAL_KEY_FILE)


@dataclass(frozen=True)
class Layout:
    """The embedded parts' places."""

    data_dir: Path
    db: Path
    vectors: Path
    collection: str

    @property
    def redis_dir(self) -> Path:
        """The embedded Redis's folder."""
        return self.data_dir / "redis"

    @property
    def ledger(self) -> Path:
        """The erasure ledger (`api.app.erasure_ledger`): merged on restore, never replaced."""
        return self.data_dir / LEDGER_FILE

    def secrets(self) -> list[Path]:
        """The secret files kept beside the store."""
        return [self.data_dir / name for name in SECRET_FILES]

    def up_running(self) -> bool:
        """True while the embedded Redis answers (``agentbus up`` or a process of it runs)."""
        return embedded.is_running(self.data_dir)


def layout(settings: AppSettings) -> Layout:
    """The places of the three embedded parts.

    Raises:
        NotEmbedded: Redis, the state store or Qdrant is configured as a server; the three
            are backed up together, so a backup of only some of them is refused.
    """
    servers = [
        name
        for name, configured in (
            ("AGENTBUS_REDIS_URL", settings.bus.redis_url),
            ("AGENTBUS_QDRANT_URL", settings.retrieval.qdrant_url),
        )
        if configured
    ]
    db = sqlite_file(settings.bus.resolved_database_url())
    if db is None:
        servers.append("AGENTBUS_DATABASE_URL")
    if servers or db is None:
        raise NotEmbedded(
            f"{', '.join(servers)} names a server; `agentbus backup` and `agentbus restore` "
            "cover the embedded Redis, SQLite store and vector store"
        )
    data_dir = settings.bus.data_dir.resolve()
    return Layout(
        data_dir=data_dir,
        db=db,
        vectors=qdrant_path(settings.retrieval).resolve(),
        collection=settings.retrieval.qdrant_collection,
    )
