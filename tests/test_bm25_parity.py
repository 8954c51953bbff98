"""bm25s, which kbqa indexes with, against rank-bm25, the reference implementation of BM25
(issue 33): the same scores for every chunk of a small index that kbqa builds, with kbqa's own
terms (words and their character 4-grams)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from kbqa.index import bm25_terms, load_index
from kbqa.retrieval.tokenizer import tokenize, with_ngrams

rank_bm25 = pytest.importorskip("rank_bm25", reason="rank-bm25 is in the dev extra")


class LuceneBM25(rank_bm25.BM25Okapi):  # type: ignore[misc, name-defined]
    """rank-bm25's Okapi BM25 as Lucene scores it, the variant bm25s uses by default
    (``method="lucene"``, Kamphuis et al. 2020): the IDF is ``ln(1 + (N - df + 0.5) / (df +
    0.5))``, never negative, and the constant factor ``k1 + 1`` of the term-frequency part is
    dropped (Lucene 8), which changes no ranking. Term frequency and length normalisation are
    rank-bm25's own."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {t: math.log(1 + (self.corpus_size - df + 0.5) / (df + 0.5))
                    for t, df in nd.items()}  # fmt: skip

    def get_scores(self, query: list[str]) -> np.ndarray:
        return super().get_scores(query) / (self.k1 + 1)


QUERIES = [
    "রবীন্দ্রনাথ ঠাকুর কোন সালে নোবেল পুরস্কার পান?",
    "বাংলাদেশের রাজধানীতে কোন নদী?",  # inflected forms: only 4-grams match
    "Which river does Paris lie on?",
    "Marie Curie Nobel Prize Chemistry",
    "বাক্য নম্বর ৫০",  # Bangla digits, the long document's repeated words
]


@pytest.mark.parametrize("query", QUERIES)
def test_bm25s_scores_every_chunk_as_rank_bm25_does(tiny_index: Path, query: str) -> None:
    index = load_index(tiny_index)
    assert (index.bm25.k1, index.bm25.b, index.bm25.method) == (1.5, 0.75, "lucene")
    reference = LuceneBM25([bm25_terms(c) for c in index.chunks], k1=1.5, b=0.75)
    terms = with_ngrams(tokenize(query))
    ours = index.bm25.get_scores(terms)
    theirs = reference.get_scores(terms)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert np.count_nonzero(theirs) > 0, "the query must match something to compare"
    top = np.argsort(-theirs, kind="stable")[:3]
    assert list(np.argsort(-ours, kind="stable")[:3]) == list(top)
