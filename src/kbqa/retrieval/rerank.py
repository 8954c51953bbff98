"""Rerankers: reorder the fused candidate pool before the reader reads its top k.

Retrieval fuses BM25 and dense scores over whole chunks; a reranker looks again at the first
``rerank_pool`` candidates with the question beside each one and picks the ``k`` the reader
reads (HybridRAG-BN reranks with a cross-encoder, the type-aware system with a type-aware
score). It is a step of retrieval (:func:`rerank_hits`), not a node of its own, so that every
pass that retrieves (the first pass, the retry with ``retry_k``, the fallback) reads reranked
chunks, and a run with the reranker off has the same route as before.

Rerankers score; they never decide. Their scores are compared with each other within one
question, never against a fixed threshold (a cross-encoder's raw logits are not calibrated
across questions: FlagEmbedding issue #250).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Protocol

import regex

from kbqa.retrieval.fusion import min_max_normalize
from kbqa.retrieval.tokenizer import tokenize, with_ngrams

RERANKERS = ("off", "lexical")
"""Names ``Context.reranker`` accepts."""

RERANK_POOL = 20
"""Fused candidates a reranker sees (HybridRAG-BN reranks a pool of about 20)."""

RERANK_WEIGHT = 0.3
"""Share of the fused retrieval score in the reranked order (the rest is the reranker's)."""

BM25_K1 = 1.2
"""BM25's term-frequency saturation (Robertson and Zaragoza, 2009, the usual value)."""
BM25_B = 0.0
"""BM25's length normalisation over sentences: none. The usual 0.75 favours short sentences;
on two BanglaRQA validation samples and the natural set, 0 kept as much or more of the answers
in the context read (docs/retrieval.md, "Reranking the pool")."""

_SENTENCE_END = regex.compile(r"(?<=[।?!.…])\s+|\n+")


class Reranker(Protocol):
    """Scores candidate passages for a question; higher is more relevant."""

    @property
    def id(self) -> str:
        """A name for records and reports (``lexical``...)."""
        ...

    def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        """One score per ``(title, text)`` passage, in order (comparable within the call
        only)."""
        ...


IdfFn = Callable[[Iterable[str]], dict[str, float]]
"""Term -> inverse document frequency over the knowledge base (the retriever's ``term_idf``)."""


class SentenceReranker:
    """A lexical reranker: a passage scores as its best sentence, scored by BM25 against the
    question, with the index's terms (words and their character 4-grams) and the knowledge
    base's IDF. Fused chunk retrieval rewards a chunk whose words match the question anywhere
    in 800 characters; the answer usually sits in the one sentence that holds the question's
    words together (the type-aware system's sentence-level rerank).

    Args:
        idf: IDF of terms over the whole knowledge base (``HybridRetriever.term_idf``); None
            counts IDF over the sentences of the passages being scored.

    Measured in docs/retrieval.md ("Reranking the pool"): on two BanglaRQA validation samples it
    moved the answer-in-context share by +3.0 and -0.5 points, so it is not on by default.
    """

    id = "lexical"

    def __init__(self, idf: IdfFn | None = None) -> None:
        self._idf = idf

    def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        """Best-sentence BM25 score of each ``(title, text)`` passage's text (0.0 for a passage
        without a question term); the title is not scored, since every chunk of a page has it.

        Raises:
            TypeError: ``question`` or a passage's text is not a string.
        """
        texts = [p[1] if isinstance(p, tuple) and len(p) == 2 else p for p in passages]
        if not isinstance(question, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError(
                "SentenceReranker.score takes a question and (title, text) passages as strings"
            )
        query = set(with_ngrams(tokenize(question)))
        sentences = [[Counter(with_ngrams(tokenize(s))) for s in split_sentences(t)] for t in texts]
        flat = [s for ss in sentences for s in ss]
        if not query or not flat:
            return [0.0] * len(passages)
        idf = self._idf(query) if self._idf is not None else _pool_idf(query, flat)
        avg = sum(sum(s.values()) for s in flat) / len(flat) or 1.0
        return [max((_bm25(s, idf, avg) for s in ss), default=0.0) for ss in sentences]


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage: split after ``।``, ``?``, ``!``, ``.``, ``…`` and at line
    breaks, as the chunker splits (:mod:`kbqa.corpus.chunking`)."""
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def _bm25(terms: Counter[str], idf: dict[str, float], avg_len: float) -> float:
    length = sum(terms.values())
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len)
    return sum(
        weight * f * (BM25_K1 + 1) / (f + norm)
        for t, weight in idf.items()
        if (f := terms.get(t, 0))
    )


def _pool_idf(query: set[str], sentences: list[Counter[str]]) -> dict[str, float]:
    n = len(sentences)
    return {t: bm25_idf(n, sum(t in s for s in sentences)) for t in query}


def bm25_idf(n_docs: int, df: int) -> float:
    """Lucene's BM25 IDF, ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (always > 0)."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def rerank_hits(
    question: str,
    hits: Sequence[tuple[int, float]],
    passages: Sequence[tuple[str, str]],
    reranker: Reranker,
    k: int,
    fused_weight: float = RERANK_WEIGHT,
) -> list[tuple[int, float]]:
    """The ``k`` best of the fused pool by ``fused_weight`` x fused score + (1 - fused_weight) x
    reranker score, each min-max normalised over the pool to [0, 1] (a reranker's logits may
    be negative; all-equal scores count as 1).

    Args:
        question: The question.
        hits: ``(chunk_id, fused score)`` in fused order.
        passages: The hits' chunks as ``(title, text)``, in the same order.
        reranker: Scores the texts.
        k: Hits to keep (> 0).
        fused_weight: In [0, 1]; 1 keeps the fused order.

    Returns:
        ``(chunk_id, combined score)``, best first; ties keep the fused order.

    Raises:
        ValueError: ``k`` not a positive integer, ``fused_weight`` outside [0, 1], passages
            and hits of different lengths, or a reranker that returned another number of
            scores or a score that is not finite.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if not isinstance(fused_weight, (int, float)) or not 0 <= fused_weight <= 1:
        raise ValueError(f"fused_weight must be in [0, 1], got {fused_weight!r}")
    if len(passages) != len(hits):
        raise ValueError(f"{len(hits)} hits but {len(passages)} passages")
    if not hits:
        return []
    scores = reranker.score(question, passages)
    if len(scores) != len(hits):
        raise ValueError(
            f"reranker {reranker.id!r} returned {len(scores)} scores for {len(hits)} passages"
        )
    if not all(math.isfinite(x) for x in scores):
        raise ValueError(f"reranker {reranker.id!r} returned a score that is not finite")
    fused_n = min_max_normalize(dict(enumerate(s for _, s in hits)))
    rerank_n = min_max_normalize(dict(enumerate(scores)))  # a logit may be negative
    combined = [
        (cid, fused_weight * fused_n[i] + (1 - fused_weight) * rerank_n[i])
        for i, (cid, _) in enumerate(hits)
    ]
    order = sorted(range(len(combined)), key=lambda i: -combined[i][1])  # stable: fused order
    return [combined[i] for i in order[:k]]


def add_reranked(
    question: str,
    hits: Sequence[tuple[int, float]],
    passages: Sequence[tuple[str, str]],
    reranker: Reranker,
    k: int,
    add: int,
    fused_weight: float = RERANK_WEIGHT,
    exclude: Collection[int] = (),
) -> list[tuple[int, float]]:
    """The fused top ``k`` as they are, then the ``add`` best of the rest of the pool by
    :func:`rerank_hits`'s combined score: the reranker widens the context instead of
    reordering it, so the hits read first are the ones fusion chose.

    Args:
        question, hits, passages, reranker, fused_weight: As for :func:`rerank_hits`.
        k: Fused hits kept first (> 0).
        add: Reranked hits added after them (>= 0).
        exclude: Chunk ids never added (the top k's previous chunks, read with them already:
            added as hits of their own, they would leave those hits without their padding).

    Returns:
        ``(chunk_id, fused score)``, the ``k`` fused hits in fused order, then the added ones,
        best first by the combined score (each keeps its fused score, at most the k-th hit's).

    Raises:
        ValueError: As :func:`rerank_hits` (``k`` too), or ``add`` not a whole number.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if not isinstance(add, int) or isinstance(add, bool) or add < 0:
        raise ValueError(f"add must be a whole number >= 0, got {add!r}")
    ranked = rerank_hits(question, hits, passages, reranker, max(len(hits), 1), fused_weight)
    top = list(hits[:k])
    have = {cid for cid, _ in top} | set(exclude)
    fused = dict(hits)
    return top + [(cid, fused[cid]) for cid, _ in ranked if cid not in have][:add]


def load_reranker(name: str, idf: IdfFn | None = None) -> Reranker | None:
    """The reranker called ``name`` (:data:`RERANKERS`); None for ``off``.

    Raises:
        ValueError: An unknown name (the message lists the known ones).
    """
    match name:
        case "off":
            return None
        case "lexical":
            return SentenceReranker(idf)
        case _:
            raise ValueError(f"reranker must be one of {', '.join(RERANKERS)}, got {name!r}")
