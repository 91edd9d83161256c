"""Errors of backup and restore: one root class, each with a stable code and a hint."""

from __future__ import annotations

from bus.errors import CodedError


class BackupError(CodedError):
    """Root of every error backup and restore raise."""

    code = "backup_error"


class BackupRefused(BackupError):
    """The command would lose or mix data, so it did nothing."""

    code = "backup_refused"


class BackupInvalid(BackupError):
    """The folder is not a complete, intact backup this version can restore."""

    code = "backup_invalid"
    hint = "give the folder `agentbus backup` wrote, unchanged"


class DataDirMissing(BackupError):
    """There is no data folder (or no store in it) to back up."""

    code = "data_dir_missing"
    hint = "set AGENTBUS_DATA_DIR to the folder `agentbus up` uses (default .agentbus)"


class NotEmbedded(BackupError):
    """A part is configured as a server; this command covers the embedded defaults."""

    code = "backup_not_embedded"
    hint = "back up servers with their own tools, together (docs/backup.md)"
