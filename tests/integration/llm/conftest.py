"""Model tests use the session-wide ``local_model_dir`` fixture from tests/conftest.py."""

from tests.conftest import missing_local_extra

__all__ = ["missing_local_extra"]
