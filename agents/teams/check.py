"""Is a team document one that can run? Every fault, named at its place.

:func:`check` returns nothing for a team that can run, and otherwise every fault it finds:
names (unknown, duplicate, a built-in's), what each agent may use (the tenant's tools and
models, the known sources, a valid output schema), each edge (its ends, its outcome, its
condition, the field it matches), the gates (only with a state store), and the paths
(:mod:`agents.teams.paths`: reachable, ending at the finalizer, loops bounded).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from agents import graph
from agents.teams.document import TeamAgent, TeamDocument, TeamEdge
from agents.teams.faults import TeamFault, pointer
from agents.teams.nodes import AGENT_OUTCOME, BUILTIN_OUTCOMES, GATES
from agents.teams.paths import path_faults


@dataclass(frozen=True, slots=True)
class Allowance:
    """What the tenant may use: tools and models (None: any), and whether runs have a
    state store to wait in at a gate."""

    tools: frozenset[str] | None = None
    models: frozenset[str] | None = None
    store: bool = True


def check(doc: TeamDocument, allowance: Allowance) -> list[TeamFault]:
    """Every fault of ``doc`` for a tenant with ``allowance``; empty when it can run."""
    faults = list(_names(doc))
    for i, agent in enumerate(doc.agents):
        faults.extend(_agent(i, agent, allowance))
    for i, edge in enumerate(doc.edges):
        faults.extend(_edge(i, edge, doc, allowance))
    faults.extend(path_faults(doc))
    return faults


def _names(doc: TeamDocument) -> Iterator[TeamFault]:
    seen: set[str] = set()
    for i, agent in enumerate(doc.agents):
        at = pointer("agents", i, "name")
        if agent.name in BUILTIN_OUTCOMES:
            yield TeamFault(
                pointer=at,
                code="reserved_name",
                message=f"{agent.name!r} is a built-in node; name the agent otherwise",
            )
        elif agent.name in seen:
            yield TeamFault(
                pointer=at, code="duplicate_agent", message=f"{agent.name!r} is declared twice"
            )
        seen.add(agent.name)


def _agent(i: int, agent: TeamAgent, allowance: Allowance) -> Iterator[TeamFault]:
    models = allowance.models
    if agent.model is not None and models is not None and agent.model not in models:
        yield TeamFault(
            pointer=pointer("agents", i, "model"),
            code="model_not_allowed",
            message=f"model {agent.model!r} is not one the tenant may use",
        )
    for j, tool in enumerate(agent.tools):
        if allowance.tools is not None and tool not in allowance.tools:
            yield TeamFault(
                pointer=pointer("agents", i, "tools", j),
                code="tool_not_allowed",
                message=f"tool {tool!r} is not one the tenant may use",
            )
    for j, source in enumerate(agent.sources):
        if source not in graph.SOURCES:
            yield TeamFault(
                pointer=pointer("agents", i, "sources", j),
                code="unknown_source",
                message=f"source {source!r} is not one of {', '.join(graph.SOURCES)}",
            )
    if agent.output_schema is not None:
        yield from _schema(i, agent.output_schema)


def _schema(i: int, schema: dict[str, Any]) -> Iterator[TeamFault]:
    at = pointer("agents", i, "output_schema")
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as e:
        place = pointer("agents", i, "output_schema", *e.path)
        yield TeamFault(pointer=place, code="invalid_schema", message=e.message)
        return
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        yield TeamFault(
            pointer=at,
            code="invalid_schema",
            message='an output schema is an object with properties ("type": "object")',
        )


def _edge(i: int, edge: TeamEdge, doc: TeamDocument, allowance: Allowance) -> Iterator[TeamFault]:
    agent = doc.agent(edge.source)
    for field, node in (("from", edge.source), ("to", edge.to)):
        if node not in BUILTIN_OUTCOMES and doc.agent(node) is None:
            yield TeamFault(
                pointer=pointer("edges", i, field),
                code="unknown_node",
                message=f"{node!r} is neither a declared agent nor a built-in node",
            )
        elif node in GATES and not allowance.store:
            yield TeamFault(
                pointer=pointer("edges", i, field),
                code="gate_without_store",
                message=f"{node} waits in the state store, and this deployment has none",
            )
    if edge.to == graph.START:
        yield TeamFault(
            pointer=pointer("edges", i, "to"),
            code="edge_into_start",
            message=f"every run starts at {graph.START}; no edge may lead back to it",
        )
    outcomes = {AGENT_OUTCOME} if agent is not None else BUILTIN_OUTCOMES.get(edge.source)
    if outcomes is not None and edge.on not in outcomes:
        yield TeamFault(
            pointer=pointer("edges", i, "on"),
            code="unknown_outcome",
            message=f"{edge.source} leaves on {', '.join(sorted(outcomes)) or 'nothing'}, "
            f"not {edge.on!r}",
        )
    if edge.attempts is not None and agent is None and edge.source in BUILTIN_OUTCOMES:
        yield TeamFault(
            pointer=pointer("edges", i, "attempts"),
            code="attempts_on_builtin",
            message=f"attempts bound a declared agent's edges; {edge.source} bounds its own "
            "(tool hops, a person at a gate, the judges' one send-back)",
        )
    if edge.when is not None and edge.when not in graph.CONDITIONS:
        yield TeamFault(
            pointer=pointer("edges", i, "when"),
            code="unknown_condition",
            message=f"condition {edge.when!r} is not one of {', '.join(graph.CONDITIONS)}",
        )
    if edge.match is not None:
        yield from _match(i, edge, agent)


def _match(i: int, edge: TeamEdge, agent: TeamAgent | None) -> Iterator[TeamFault]:
    assert edge.match is not None
    schema = agent.output_schema if agent is not None else None
    if schema is None:
        yield TeamFault(
            pointer=pointer("edges", i, "match"),
            code="match_without_schema",
            message=f"{edge.source} has no output schema, so it has no fields to route on",
        )
        return
    assert agent is not None  # it has a schema
    if agent.output_field(edge.match.field) is None:
        yield TeamFault(
            pointer=pointer("edges", i, "match", "field"),
            code="unknown_field",
            message=f"{edge.source}'s output has no field {edge.match.field!r}",
        )
        return
    enum = agent.output_enum(edge.match.field)
    if enum is not None and edge.match.equals not in enum:
        yield TeamFault(
            pointer=pointer("edges", i, "match", "equals"),
            code="value_not_in_enum",
            message=f"{edge.match.field} is one of {enum}, never {edge.match.equals!r}",
        )
