"""Which roles `agentbus up --processes N` gives its helper processes."""

from __future__ import annotations

from api.compose.processes import helper_roles
from api.compose.roles import UP_ROLES
from bus.keys import Role
from retrieval.settings import RetrievalSettings


def test_on_the_embedded_store_helpers_run_every_role_but_retrieval() -> None:
    roles = helper_roles(RetrievalSettings(), UP_ROLES)
    assert Role.GATEWAY in roles  # search_docs reaches the store over the bus
    assert set(roles) == set(UP_ROLES) - {Role.RETRIEVAL}


def test_with_a_qdrant_server_helpers_run_retrieval_too() -> None:
    roles = helper_roles(RetrievalSettings(qdrant_url="http://qdrant:6333"), UP_ROLES)
    assert list(roles) == list(UP_ROLES)
