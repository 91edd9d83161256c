"""Retrieval evaluation on a labelled question set the project ships (``docs/``)."""
