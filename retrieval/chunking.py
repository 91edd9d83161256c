"""Heading- and sentence-aware chunking with overlap.

A chunk never crosses a heading (sections are chunked apart, so a chunk's heading path is
true for all of its text) and never cuts a sentence unless that one sentence is longer
than a chunk. Consecutive chunks of a section share their last/first sentences (up to
``overlap_chars``), so a fact split across a boundary is still whole in one of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.models import Chunk, Document

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    """Chunk size and overlap, in characters (MiniLM reads ~256 tokens ≈ 1,000 chars)."""

    max_chars: int = 1000
    overlap_chars: int = 150


@dataclass(frozen=True, slots=True)
class _Unit:
    text: str
    paragraph: int


def _split_long(sentence: str, limit: int) -> list[str]:
    # A "sentence" longer than a chunk (a table row, a minified blob): cut at spaces.
    parts: list[str] = []
    current = ""
    for word in sentence.split():
        while len(word) > limit:  # a single enormous token
            if current:
                parts.append(current)
                current = ""
            parts.append(word[:limit])
            word = word[limit:]
        if current and len(current) + 1 + len(word) > limit:
            parts.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        parts.append(current)
    return parts


def _units(text: str, limit: int) -> list[_Unit]:
    units: list[_Unit] = []
    for number, paragraph in enumerate(_PARAGRAPH.split(text)):
        lines = [ln.rstrip() for ln in paragraph.strip("\n").splitlines() if ln.strip()]
        if not lines:
            continue
        if any(_LIST_ITEM.match(ln) or ln.startswith(("    ", "\t", "|")) for ln in lines):
            pieces = lines  # lists, code and tables: a line is the unit
        else:
            pieces = _SENTENCE_END.split(" ".join(ln.strip() for ln in lines))
        for piece in pieces:
            piece = piece.strip()
            if not piece:
                continue
            for part in [piece] if len(piece) <= limit else _split_long(piece, limit):
                units.append(_Unit(part, number))
    return units


def _join(units: list[_Unit]) -> str:
    out = ""
    for i, unit in enumerate(units):
        if i:
            out += "\n\n" if unit.paragraph != units[i - 1].paragraph else " "
        out += unit.text
    return out


def _size(units: list[_Unit]) -> int:
    return len(_join(units))


def chunk_text(text: str, config: ChunkingConfig = ChunkingConfig()) -> list[str]:
    """Split one section's text into chunk texts."""
    chunks: list[str] = []
    current: list[_Unit] = []
    fresh = 0  # units in `current` not already emitted in an earlier chunk
    for unit in _units(text, config.max_chars):
        if current and _size([*current, unit]) > config.max_chars:
            if fresh:
                chunks.append(_join(current))
            tail: list[_Unit] = []
            for previous in reversed(current):
                if _size([previous, *tail]) > config.overlap_chars:
                    break
                tail.insert(0, previous)
            current = tail if _size([*tail, unit]) <= config.max_chars else []
            fresh = 0
        current.append(unit)
        fresh += 1
    if current and fresh:
        chunks.append(_join(current))
    return chunks


def chunk_document(doc: Document, config: ChunkingConfig = ChunkingConfig()) -> list[Chunk]:
    """The document's chunks, numbered in reading order."""
    chunks: list[Chunk] = []
    for section in doc.sections:
        for text in chunk_text(section.text, config):
            chunks.append(Chunk(position=len(chunks), heading=section.heading, text=text))
    return chunks
