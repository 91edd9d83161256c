"""Each wire model is declared once, in ``agentbus_contracts``: every other name for it (the
server's ``bus.events``, the client's ``agentbus_client.models``) is that very class."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest
from pydantic import BaseModel

import agentbus_client.models
import agentbus_client.models.events
import agentbus_contracts
import agentbus_contracts.events
import bus.events


def _declared() -> dict[str, type[BaseModel]]:
    """Every pydantic model the contracts' modules declare, by name."""
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(agentbus_contracts.__path__, "agentbus_contracts."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not (inspect.isclass(value) and issubclass(value, BaseModel)):
                continue
            if value.__module__ == info.name:
                found[name] = value
    return found


DECLARED = _declared()


def test_the_contracts_declare_each_model_name_once() -> None:
    modules = [
        importlib.import_module(info.name)
        for info in pkgutil.iter_modules(agentbus_contracts.__path__, "agentbus_contracts.")
    ]
    owners = [
        (name, module.__name__)
        for module in modules
        for name, value in vars(module).items()
        if inspect.isclass(value) and getattr(value, "__module__", None) == module.__name__
    ]
    names = [name for name, _ in owners]

    assert {"Run", "Done", "ErrorBody"} <= set(DECLARED)
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    "alias",
    [bus.events, agentbus_client.models, agentbus_client.models.events],
    ids=lambda m: m.__name__,
)
def test_every_other_name_for_a_wire_model_is_the_same_class(alias: ModuleType) -> None:
    shared = {name: value for name, value in vars(alias).items() if name in DECLARED}

    assert shared, f"{alias.__name__} names no wire model"
    assert {name for name, value in shared.items() if value is not DECLARED[name]} == set()


def test_the_client_names_every_model_the_contracts_export() -> None:
    assert set(agentbus_contracts.__all__) <= set(dir(agentbus_client.models))
    assert agentbus_client.models.events.parse_event is agentbus_contracts.events.parse_event
