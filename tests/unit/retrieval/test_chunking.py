"""Chunking respects headings and sentences, overlaps, and loaders keep structure."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from retrieval.chunking import ChunkingConfig, chunk_document, chunk_text
from retrieval.errors import DocumentUnreadable, UnsupportedDocument
from retrieval.loaders import discover, kind_of, parse

SMALL = ChunkingConfig(max_chars=200, overlap_chars=60)
SENTENCES = [f"Sentence number {i} talks about topic {i} at some length." for i in range(12)]


def test_chunks_stay_under_the_cap_and_end_on_sentence_boundaries() -> None:
    chunks = chunk_text(" ".join(SENTENCES), SMALL)
    assert len(chunks) > 2
    for chunk in chunks:
        assert len(chunk) <= SMALL.max_chars
        assert chunk.startswith("Sentence") and chunk.endswith(".")


def test_neighbouring_chunks_overlap_by_whole_sentences() -> None:
    chunks = chunk_text(" ".join(SENTENCES), SMALL)
    for before, after in itertools.pairwise(chunks):
        last_sentence = before.rsplit(". ", 1)[-1]
        assert after.startswith(last_sentence.rstrip(".")), (before, after)
    # Every sentence survives somewhere.
    assert all(any(s in c for c in chunks) for s in SENTENCES)


def test_no_overlap_when_disabled_and_no_empty_chunks() -> None:
    chunks = chunk_text(" ".join(SENTENCES), ChunkingConfig(max_chars=200, overlap_chars=0))
    assert sum(c.count("Sentence") for c in chunks) == len(SENTENCES)
    assert chunk_text("   \n\n  ") == []


def test_an_overlong_sentence_is_cut_at_spaces() -> None:
    words = " ".join(f"word{i}" for i in range(200))
    chunks = chunk_text(words, SMALL)
    assert all(len(c) <= SMALL.max_chars for c in chunks)
    assert " ".join(chunks).split() == words.split()


def test_markdown_headings_split_sections_and_never_share_a_chunk() -> None:
    md = (
        "---\ntitle: Guide\n---\n# Ignored H1\n\nIntro.\n\n## Install\n\nRun pip.\n\n"
        "### Linux\n\nUse apt.\n\n```\n# not a heading\n```\n\n## Use\n\nCall it."
    )
    doc = parse(md.encode(), source="docs/guide.md")
    assert doc.title == "Guide"
    headings = [s.heading for s in doc.sections]
    assert headings == ["", "Install", "Install > Linux", "Use"]
    assert "# not a heading" in doc.sections[2].text
    chunks = chunk_document(doc, SMALL)
    assert [c.heading for c in chunks] == headings
    assert [c.position for c in chunks] == [0, 1, 2, 3]
    assert len({c.content_hash for c in chunks}) == 4


def test_html_keeps_headings_and_drops_scripts() -> None:
    html = (
        "<html><head><title>Page</title><script>var x=1</script></head><body>"
        "<h1>Top</h1><p>First para.</p><h2>Part</h2><p>Second <b>para</b>.</p></body></html>"
    )
    doc = parse(html.encode(), source="p.html")
    assert doc.title == "Page"
    assert [(s.heading, s.text) for s in doc.sections] == [
        ("", "First para."),
        ("Part", "Second para."),
    ]
    assert "var x" not in doc.text


def _tiny_pdf(text: str) -> bytes:
    stream = f"BT /F1 24 Tf 72 700 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_pdf_text_is_read_per_page() -> None:
    doc = parse(_tiny_pdf("Hello PDF world"), source="files/report.pdf")
    assert doc.kind == "pdf"
    assert doc.sections[0].heading == "page 1"
    assert "Hello PDF world" in doc.sections[0].text
    assert doc.title == "Hello PDF world"


def test_broken_pdf_and_unknown_types_fail_with_codes(tmp_path: Path) -> None:
    with pytest.raises(DocumentUnreadable) as broken:
        parse(b"%PDF-1.4 garbage", source="x.pdf")
    assert broken.value.code == "document_unreadable"
    with pytest.raises(UnsupportedDocument):
        kind_of("image.png")
    (tmp_path / "a.md").write_text("# A\n\ntext")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("plain")
    (tmp_path / "c.png").write_bytes(b"")
    assert [p.name for p in discover([tmp_path])] == ["a.md", "b.txt"]
    doc = parse(b"just text", source="notes/n.txt")
    assert (doc.title, doc.sections[0].text) == ("n", "just text")
