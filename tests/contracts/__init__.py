"""The shared contract suites, one per port, as FastStream's ``tests/brokers/base``.

Each module holds a class of tests that every implementation of its port passes:

* ``llm.LLMContract``: the scripted model, the OpenAI-compatible adapter (against a fake
  server), the local model (slow), and the wrappers every run's model goes through;
* ``embedder.EmbedderContract``: the hashing, MiniLM (ONNX) and OpenAI-compatible embedders;
* ``vector_store.VectorStoreContract``: Qdrant Edge, qdrant-client's local mode, and a
  Qdrant server when ``AGENTBUS_TEST_QDRANT_URL`` names one.

An implementation runs a suite by subclassing it in its own tier (``tests/unit``,
``tests/integration``) with a fixture that builds it; ``test_every_adapter_is_checked.py``
fails when an adapter in the product has no such subclass, so a new adapter passes its
suite before it is wired. The state store's suite is ``tests/integration/store``: its
``store_url`` fixture runs each test on SQLite and on PostgreSQL.
"""
