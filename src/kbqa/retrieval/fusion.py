"""Score fusion of two retrievers over the union of their candidates.

Weighted sum of min-max normalised scores, 0.65 BM25 / 0.35 dense, from HybridRAG-BN (2026
Bangla KBQA competition, first place). Reciprocal rank fusion (Cormack et al., SIGIR 2009) is
offered as the standard alternative.
"""

from __future__ import annotations

from collections.abc import Mapping

BM25_WEIGHT = 0.65
"""Weight of the BM25 scores in the fused score (HybridRAG-BN)."""
DENSE_WEIGHT = 0.35
"""Weight of the dense scores in the fused score (HybridRAG-BN)."""
RRF_K = 60
"""Rank offset of reciprocal rank fusion (Cormack et al., 2009)."""


def min_max_normalize(scores: Mapping[int, float]) -> dict[int, float]:
    """Rescale scores to [0, 1]; all-equal scores map to 1.0 (each is the best)."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo <= 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - lo) / (hi - lo) for key, value in scores.items()}


def weighted_fusion(
    bm25: Mapping[int, float],
    dense: Mapping[int, float],
    bm25_weight: float = BM25_WEIGHT,
    dense_weight: float = DENSE_WEIGHT,
) -> list[tuple[int, float]]:
    """Fuse two candidate lists by a weighted sum of min-max normalised scores.

    A candidate found by only one retriever gets 0 from the other, so a query with no lexical
    overlap still returns its dense hits.

    Args:
        bm25: chunk id -> raw BM25 score for the BM25 candidates (zero scores are dropped:
            they mean no query term matched).
        dense: chunk id -> cosine similarity for the dense candidates.
        bm25_weight: Weight of the BM25 part (>= 0).
        dense_weight: Weight of the dense part (>= 0).

    Returns:
        ``(chunk_id, fused_score)`` pairs over the union of candidates, best first; ties broken
        by chunk id.
    """
    b = min_max_normalize({k: v for k, v in bm25.items() if v > 0})
    d = min_max_normalize(dense)
    fused = {
        key: bm25_weight * b.get(key, 0.0) + dense_weight * d.get(key, 0.0) for key in b.keys() | d
    }
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


def reciprocal_rank_fusion(*rankings: list[int], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (k + rank(d)), rank from 1."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
