"""The base of every message model, and its cheap copy with some fields changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

# Declared with the wire models (bus/contracts): the requests a client sends are messages too.
from agentbus_contracts.base import Frozen as Frozen

F = TypeVar("F", bound=BaseModel)
_set = object.__setattr__


def replaced(model: F, change: Mapping[str, Any]) -> F:
    """``model.model_copy(update=change)``, at less cost: the run path copies its state and
    commands at every step (pydantic's copy goes through ``copy.copy`` three times per
    model). As there, nothing in ``change`` is validated: callers pass typed values (the
    typed ``evolve`` methods). A model with private attributes or extra fields (none of the
    messages has either) is copied by pydantic."""
    if model.__pydantic_private__ is not None or model.__pydantic_extra__ is not None:
        return model.model_copy(update=change)
    cls = type(model)
    copied = cls.__new__(cls)
    _set(copied, "__dict__", {**model.__dict__, **change})
    _set(copied, "__pydantic_extra__", None)
    _set(copied, "__pydantic_fields_set__", model.__pydantic_fields_set__ | change.keys())
    _set(copied, "__pydantic_private__", None)
    return copied
