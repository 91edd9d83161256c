"""Retrieval: ingestion, embedder/reranker ports and adapters, the vector stores (Qdrant
Edge embedded, a Qdrant server), hybrid search with tenant/ACL filters, and checked
citations.

Entry points: `retrieval.stack.open_retrieval` (wiring), `retrieval.worker.
make_retrieval_handler` (the retrieval role's ingest), `retrieval.remote` (searches for
processes without the store), `retrieval.citations.check_answer_citations` (the
finalizer), ``gateway.tools.search_docs.SearchDocs`` (the researcher's tool).
"""
