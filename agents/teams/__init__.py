"""Teams: a tenant's agents and how they hand off, declared as a document.

``document`` holds the models, ``parse`` reads YAML or JSON, ``check`` refuses a team with
every fault named at its place (a JSON pointer), ``shipped`` holds the built-in ``single``
and ``multi`` graphs as documents the same check accepts, and ``draw`` makes Mermaid.
"""
