"""No setting is stored and ignored: every field of every settings class is read somewhere
outside the module that defines it (issue 14: "no setting left that nothing reads")."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

from agents.settings import AgentSettings
from api.settings import ApiSettings
from bus.settings import BusSettings, EnvSettings
from gateway.settings import GatewaySettings
from retrieval.settings import RetrievalSettings

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agents", "api", "bus", "gateway", "retrieval")
CLASSES: tuple[type[BaseSettings], ...] = (
    EnvSettings,
    BusSettings,
    AgentSettings,
    GatewaySettings,
    RetrievalSettings,
    ApiSettings,
)


def _sources() -> dict[Path, str]:
    return {p: p.read_text() for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


SOURCES = _sources()


def _own_fields(cls: type[BaseSettings]) -> list[str]:
    inherited = {n for base in cls.__mro__[1:] for n in getattr(base, "model_fields", {})}
    return [n for n in cls.model_fields if n not in inherited]


@pytest.mark.parametrize(
    ("cls", "name"), [(c, n) for c in CLASSES for n in _own_fields(c)], ids=lambda v: str(v)
)
def test_every_setting_is_read_outside_its_definition(cls: type[BaseSettings], name: str) -> None:
    # Read directly, or through a method or property of its class that is read outside.
    via = [name] + [
        member
        for member, value in vars(cls).items()
        if callable(getattr(value, "fget", value))
        and not member.startswith("__")
        and re.search(rf"self\.{name}\b", inspect.getsource(getattr(value, "fget", value)))
    ]
    defined_in = Path(inspect.getfile(cls)).resolve()
    read = re.compile(rf"\.({'|'.join(via)})\b")
    readers = [p for p, text in SOURCES.items() if p != defined_in and read.search(text)]
    assert readers, f"{cls.__name__}.{name} (AGENTBUS_{name.upper()}) is read by nothing"


def test_the_settings_page_lists_every_setting() -> None:
    readme = (ROOT / "docs" / "settings.md").read_text()
    missing = [
        f"AGENTBUS_{n.upper()}"
        for c in CLASSES
        for n in _own_fields(c)
        if f"`AGENTBUS_{n.upper()}`" not in readme
    ]
    assert not missing, f"not in the settings table of docs/settings.md: {', '.join(missing)}"
