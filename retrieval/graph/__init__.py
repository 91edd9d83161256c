"""The knowledge graph: facts extracted from chunks at ingest, walked at query time.

``entities`` (names, figures and their matching keys), ``rules`` (the default
extractor), ``index`` (the ingest side: extract and store a batch's facts), ``search``
(the query side: the entities a question names, one or two hops, passages) and
``source`` (the ``graph`` gather source). The facts live in SQL (``bus.store.facts``).
"""
