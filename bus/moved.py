"""Names that moved: still importable from their old module for one release, with a warning.

An extension point (a plugin's import, a port, the client, a setting) is public API: when
its name moves, the old path keeps working for one release and says where to go. The old
module defines ``__getattr__ = moved(__name__, {"Name": "new.module"})`` (PEP 562): the
first access to ``old.Name`` warns with a ``DeprecationWarning`` and returns
``new.module.Name``, the same object.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from importlib import import_module


def moved(old_module: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` serving each name of ``homes`` from its new module."""

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
        warnings.warn(
            f"{old_module}.{name} moved to {home}: import it from there "
            "(this path goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(import_module(home), name)

    return __getattr__
