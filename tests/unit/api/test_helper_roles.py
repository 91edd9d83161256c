"""Which roles `agentbus up --processes N` gives its helper processes."""

from __future__ import annotations

from api.bootstrap import UP_ROLES
from api.helpers import helper_roles
from bus.keys import Role
from bus.settings import Settings


def test_on_the_embedded_store_helpers_run_every_role_but_retrieval() -> None:
    roles = helper_roles(Settings(), UP_ROLES)
    assert Role.GATEWAY in roles  # search_docs reaches the store over the bus
    assert set(roles) == set(UP_ROLES) - {Role.RETRIEVAL}


def test_with_a_qdrant_server_helpers_run_retrieval_too() -> None:
    roles = helper_roles(Settings(qdrant_url="http://qdrant:6333"), UP_ROLES)
    assert list(roles) == list(UP_ROLES)
