"""The deployment's settings, composed where the process starts: one part per package.

Every part reads its own ``AGENTBUS_*`` variables (the names did not change when the one
settings class was split); the composition root passes each package only its part, plus
the bus's to the packages that publish or consume on the bus.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from agents.settings import AgentSettings
from api.settings import ApiSettings
from bus.settings import BusSettings, EnvSettings
from gateway.settings import GatewaySettings
from retrieval.settings import RetrievalSettings

#: The settings class of each package.
PARTS: tuple[type[EnvSettings], ...] = (
    BusSettings,
    AgentSettings,
    RetrievalSettings,
    GatewaySettings,
    ApiSettings,
)

_Part = TypeVar("_Part", bound=EnvSettings)


@dataclass(frozen=True, kw_only=True)
class AppSettings:
    """Each package's settings, read from the environment when not given."""

    bus: BusSettings = field(default_factory=BusSettings)
    agents: AgentSettings = field(default_factory=AgentSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    gateway: GatewaySettings = field(default_factory=GatewaySettings)
    api: ApiSettings = field(default_factory=ApiSettings)

    @classmethod
    def load(cls, **overrides: Any) -> AppSettings:
        """From the environment, with ``overrides`` (field names of any part) on top.

        A field several parts declare (``data_dir``) goes to each of them.

        Raises:
            TypeError: an override names no field of any part.
        """
        unknown = set(overrides) - {name for part in PARTS for name in part.model_fields}
        if unknown:
            raise TypeError(f"no setting named {', '.join(sorted(unknown))}")

        def read(part: type[_Part]) -> _Part:
            return part(**{k: v for k, v in overrides.items() if k in part.model_fields})

        return cls(
            bus=read(BusSettings),
            agents=read(AgentSettings),
            retrieval=read(RetrievalSettings),
            gateway=read(GatewaySettings),
            api=read(ApiSettings),
        )


def env_names() -> set[str]:
    """Every environment variable some part of the settings reads."""
    prefix = EnvSettings.model_config.get("env_prefix", "")
    return {f"{prefix}{name}".upper() for part in PARTS for name in part.model_fields}
