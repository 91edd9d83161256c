"""Value types shared by ingestion, the store, search and citations."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: The ACL entry meaning "every user of the tenant".
PUBLIC = "*"


def sha256_hex(*parts: str) -> str:
    """SHA-256 of the parts joined by a separator that cannot occur in them."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Access:
    """Who is searching: the search filter is built from this and nothing else.

    Attributes:
        tenant: the caller's tenant; chunks of other tenants are never returned.
        groups: the caller's ACL groups; a chunk is readable when its ACL lists one of
            them or is public (``*``).
    """

    tenant: str
    groups: frozenset[str] = frozenset()

    @classmethod
    def of(cls, tenant: str, groups: Iterable[str] = ()) -> Access:
        """Build from any iterable of groups."""
        return cls(tenant, frozenset(groups))

    def readable_acl(self) -> list[str]:
        """ACL entries any one of which makes a chunk readable to this caller."""
        return sorted({PUBLIC, *self.groups})


def normalise_acl(groups: Iterable[str]) -> list[str]:
    """An ACL as stored: sorted, unique; empty means public."""
    acl = sorted({g.strip() for g in groups if g.strip()})
    return [PUBLIC] if not acl or PUBLIC in acl else acl


@dataclass(frozen=True, slots=True)
class Section:
    """A run of text under one heading path (``Guide > Install``); empty heading = none."""

    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed document, before chunking.

    Attributes:
        source: where it came from (path or URL); with the tenant it identifies it.
        title: the document's title.
        kind: ``markdown``, ``text``, ``html`` or ``pdf``.
        sections: the text, split at headings (PDF: at pages).
    """

    source: str
    title: str
    kind: str
    sections: tuple[Section, ...]

    @property
    def text(self) -> str:
        """All the text, headings included, for hashing."""
        return "\n\n".join(f"{s.heading}\n{s.text}" for s in self.sections)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document small enough to embed.

    Attributes:
        position: order of the chunk within its document.
        heading: the heading path it sits under.
        text: the chunk's own text.
    """

    position: int
    heading: str
    text: str

    @property
    def content_hash(self) -> str:
        """Hash of what is embedded (heading and text)."""
        return sha256_hex(self.heading, self.text)


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk as stored in (and returned by) the vector store.

    Attributes:
        id: the point id (deterministic: document, position, content).
        tenant: the owning tenant.
        acl: groups that may read it (``*`` = everyone in the tenant).
        doc_id: stable id of the document (tenant + source).
        version: the document version this chunk belongs to.
        source: the document's source.
        title: the document's title.
        position: order within the document.
        heading: the heading path.
        text: the text.
        content_hash: SHA-256 of heading and text.
    """

    id: str
    tenant: str
    acl: tuple[str, ...]
    doc_id: str
    version: str
    source: str
    title: str
    position: int
    heading: str
    text: str
    content_hash: str

    def payload(self) -> dict[str, Any]:
        """The point's payload in a vector store (everything but the id)."""
        return {
            "tenant": self.tenant,
            "acl": list(self.acl),
            "doc_id": self.doc_id,
            "version": self.version,
            "source": self.source,
            "title": self.title,
            "position": self.position,
            "heading": self.heading,
            "text": self.text,
            "content_hash": self.content_hash,
        }

    @classmethod
    def from_payload(cls, point_id: object, p: dict[str, Any]) -> StoredChunk:
        """The chunk a stored point holds."""
        return cls(
            id=str(point_id),
            tenant=p["tenant"],
            acl=tuple(p["acl"]),
            doc_id=p["doc_id"],
            version=p["version"],
            source=p["source"],
            title=p.get("title", ""),
            position=int(p["position"]),
            heading=p.get("heading", ""),
            text=p["text"],
            content_hash=p["content_hash"],
        )


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a chunk and its score (method-specific scale)."""

    chunk: StoredChunk
    score: float
    scores: dict[str, float] = field(default_factory=dict[str, float])
