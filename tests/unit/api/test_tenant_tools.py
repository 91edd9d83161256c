"""The tools a tenant's models are offered: the document tools only once it has documents,
and still offered when the catalogue cannot be read (the gateway checks every call)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from api.compose.settings import AppSettings
from api.compose.tenant_tools import TenantTools
from bus.store import DocumentRecord, DocumentStore, make_engine, open_store
from gateway.mcp.hub import McpHub
from gateway.ports import TenantPolicy
from gateway.registry import ToolRegistry
from gateway.tenants import DeploymentPolicies
from gateway.tools import builtin_tools
from gateway.tools.query_graph import QueryGraph
from gateway.tools.search_docs import SearchDocs

DOCUMENT_TOOLS = {"search_docs", "query_graph"}


#: Listing the tools runs no search: the tools get none.
NO_SEARCH: Any = None


def catalogue(documents: DocumentStore) -> TenantTools:
    tools = [*builtin_tools(), SearchDocs(NO_SEARCH), QueryGraph(NO_SEARCH)]
    policies = DeploymentPolicies(TenantPolicy())
    return TenantTools(ToolRegistry(tools), policies, McpHub(), documents=documents)


def _document(tenant_id: str) -> DocumentRecord:
    now = datetime.now(UTC)
    return DocumentRecord(
        tenant_id=tenant_id, doc_id="d1", source="handbook.md", title="Handbook",
        uploaded_by="root", job_id="j1", chunks=1, size_bytes=10, created_at=now, updated_at=now,
    )  # fmt: skip


async def test_the_document_tools_are_offered_to_the_tenants_with_documents_only(
    make_settings: Callable[..., AppSettings],
) -> None:
    async with open_store(make_settings().bus, migrate=True) as stores:
        assert stores.documents is not None
        await stores.documents.put(_document("t1"))
        offered = catalogue(stores.documents)

        with_docs = {t.name for t in await offered("t1")}
        without = {t.name for t in await offered("t2")}

    assert with_docs >= DOCUMENT_TOOLS and "calculator" in with_docs
    assert not DOCUMENT_TOOLS & without and without == with_docs - DOCUMENT_TOOLS


async def test_an_unreadable_catalogue_offers_the_document_tools(
    make_settings: Callable[..., AppSettings],
) -> None:
    # A store nobody migrated: the catalogue's table is missing, every read fails.
    engine = make_engine(make_settings().bus.resolved_database_url())
    try:
        offered = {t.name for t in await catalogue(DocumentStore(engine))("t1")}
    finally:
        await engine.dispose()
    assert offered >= DOCUMENT_TOOLS and "calculator" in offered
