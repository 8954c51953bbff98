"""Coverage cleaning and sentence-aware chunking.

Coverage strategy from HybridRAG-BN's primary pipeline: light cleaning, chunks of about 800
characters with 150 characters of overlap, split on sentence boundaries where possible. Bangla
sentences end in the danda ``।`` (and ``?`` / ``!``), English ones in ``.`` ``?`` ``!``.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import regex

from kbqa.text import is_blank

CHUNK_SIZE = 800
"""Target chunk length in characters (HybridRAG-BN coverage pipeline)."""
CHUNK_OVERLAP = 150
"""Characters shared between consecutive chunks (HybridRAG-BN)."""

_SENTENCE_END = regex.compile(r"(?<=[।?!.…])\s+|\n+")
_SPACES = regex.compile(r"[^\S\n]+")
_CONTROL = regex.compile(r"[\p{Cc}--[\n\t]]", flags=regex.V1)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A passage of a document, the unit of retrieval.

    Attributes:
        chunk_id: Global 0-based id, the row of this chunk in every index.
        doc_id: Document the chunk comes from.
        position: 0-based position of the chunk within its document.
        prev_chunk_id: ``chunk_id`` of the chunk before it in the same document, or -1.
        title: Title of the document.
        url: URL of the document ("" when unknown).
        text: Chunk text.
    """

    chunk_id: int
    doc_id: str
    position: int
    prev_chunk_id: int
    title: str
    url: str
    text: str


def clean_text(text: str) -> str:
    """Light (coverage) cleaning: NFC, control characters dropped, spaces folded, lines with
    nothing visible (only spaces and format characters, :func:`kbqa.text.is_blank`) dropped.

    Zero-width joiners inside text are kept: Bangla conjuncts such as ``র‍্যাব`` need them for
    display; matching removes them (:func:`kbqa.text.normalize_text`).
    """
    text = unicodedata.normalize("NFC", text)
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if not is_blank(line))


def split_sentences(text: str) -> list[str]:
    """Split text after ``।`` ``?`` ``!`` ``.`` ``…`` followed by space, and at newlines."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _hard_split(sentence: str, size: int, overlap: int) -> list[str]:
    """Split one over-long sentence into windows of ``size`` chars, cut at spaces if possible."""
    pieces, start = [], 0
    while start < len(sentence):
        end = min(start + size, len(sentence))
        if end < len(sentence):
            cut = sentence.rfind(" ", start + size // 2, end)
            end = cut if cut > start else end
        pieces.append(sentence[start:end].strip())
        if end >= len(sentence):
            break
        start = max(end - overlap, start + 1)
    return [p for p in pieces if p]


def chunk_text(text: str, size: int = CHUNK_SIZE, overlap: int = CHUNK_OVERLAP) -> list[str]:
    """Pack sentences into chunks of at most ``size`` characters.

    Each chunk after the first starts with the last sentences of the previous chunk, as many as
    fit in ``overlap`` characters (at least the final sentence when it is shorter than
    ``overlap``). A sentence longer than ``size`` is split at spaces with ``overlap`` chars kept.

    Args:
        text: Cleaned text.
        size: Maximum chunk length in characters (> 0).
        overlap: Overlap in characters (0 <= overlap < size).

    Returns:
        The chunks, in document order.

    Raises:
        ValueError: ``size`` <= 0 or ``overlap`` outside ``[0, size)``.
    """
    if size <= 0:
        raise ValueError(f"chunk size must be > 0, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"chunk overlap must be in [0, {size}), got {overlap}")
    units: list[str] = []
    for sentence in split_sentences(text):
        units.extend(_hard_split(sentence, size, overlap) if len(sentence) > size else [sentence])
    chunks: list[str] = []
    current: list[str] = []
    for unit in units:
        if current and len(" ".join([*current, unit])) > size:
            chunks.append(" ".join(current))
            carry: list[str] = []
            for prev in reversed(current):
                if len(" ".join([prev, *carry])) > overlap:
                    break
                carry.insert(0, prev)
            current = carry if len(" ".join([*carry, unit])) <= size else []
        current.append(unit)
    if current:
        chunks.append(" ".join(current))
    return chunks


def chunk_document(
    doc_id: str,
    title: str,
    url: str,
    text: str,
    *,
    first_chunk_id: int,
    size: int = CHUNK_SIZE,
    overlap: int = CHUNK_OVERLAP,
) -> list[Chunk]:
    """Clean and chunk one document, numbering chunks from ``first_chunk_id``."""
    pieces = chunk_text(clean_text(text), size=size, overlap=overlap)
    return [
        Chunk(
            chunk_id=first_chunk_id + i,
            doc_id=doc_id,
            position=i,
            prev_chunk_id=first_chunk_id + i - 1 if i > 0 else -1,
            title=title,
            url=url,
            text=piece,
        )
        for i, piece in enumerate(pieces)
    ]
