"""What a build writes beside BM25 and the dense part: each part's chunk store, manifest and
extra files, and the top manifest of a ``--strategy both`` index (formats in
:mod:`kbqa.index.store`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Literal, Protocol

from kbqa.corpus.chunking import Chunk
from kbqa.embedders import Embedder
from kbqa.index.store import (
    CHUNKS,
    FORMAT_VERSION,
    MANIFEST,
    BuildReport,
    source_sha256,
    write_json,
)
from kbqa.retrieval.tokenizer import TERMS_WORDS_NGRAMS
from kbqa.text import TEXT_NORMALIZATION
from kbqa.version import __version__


class PartInput(Protocol):
    """What a part's manifest records of its input (:class:`kbqa.index.build.StrategyInput`)."""

    chunk_size: int
    chunk_overlap: int
    extra_files: dict[str, str]


def write_manifests(
    chunked: dict[str, tuple[int, list[Chunk]]],
    parts: Mapping[str, PartInput],
    part_dirs: dict[str, Path],
    tmp: Path,
    embedder: Embedder,
    dim: int,
    report: BuildReport,
    *,
    source: str | Path | None,
    multi: bool,
    dense: Literal["now", "later"],
) -> None:
    """Each part's chunk store, manifest and extra files, and (``multi``) the top manifest."""
    base = {
        "format_version": FORMAT_VERSION,
        "kbqa_version": __version__,
        "embedder": embedder.id,
        "embedding_dim": dim,
        "dense": "none" if embedder.dim == 0 else ("ready" if dense == "now" else "pending"),
        "bm25_terms": TERMS_WORDS_NGRAMS,
        "text_normalization": TEXT_NORMALIZATION,
    }
    prov = {
        "source": str(source) if source else None,
        "source_sha256": source_sha256(Path(source)) if source else None,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    for name, (n_docs, chunks) in chunked.items():
        where = part_dirs[name]
        with (where / CHUNKS).open("w", encoding="utf-8") as fh:
            for c in chunks:
                fh.write(json.dumps(asdict(c), ensure_ascii=False) + "\n")
        part = parts[name]
        chunking = {"strategy": name, "size": part.chunk_size, "overlap": part.chunk_overlap}
        counts = {
            "documents": n_docs,
            "empty_documents": report.per_strategy[name]["empty_documents"],
            "chunks": len(chunks),
        }
        write_json(where / MANIFEST, base | {"chunking": chunking} | counts | prov)
        for fname, text in part.extra_files.items():
            (where / Path(fname).name).write_text(text, encoding="utf-8")
    if multi:
        indexes = {
            name: {
                "size": parts[name].chunk_size,
                "overlap": parts[name].chunk_overlap,
                "documents": n_docs,
                "chunks": len(chunks),
            }
            for name, (n_docs, chunks) in chunked.items()
        }
        top = {
            "indexes": indexes,
            "default": next(iter(parts)),
            "chunks": report.chunks,
            "distinct_texts": report.distinct_texts,
        }
        write_json(tmp / MANIFEST, base | top | prov)
