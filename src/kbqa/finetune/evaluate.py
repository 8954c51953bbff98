"""Score a reader on rendered examples through llama.cpp: what is served is what is measured.

Each example's prompt is sent as it is (the same text the generate node would send); the reply
is judged by the serving abstention check (:func:`kbqa.answers.abstention.judge`) and
scored with SQuAD token F1 / exact match against the example's gold answers (an ``abstain``
example scores 1 exactly when the reader abstained).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbqa.answers.abstention import judge
from kbqa.context import Context
from kbqa.evals.metrics import exact_match, max_over_golds, token_f1
from kbqa.finetune.examples import ReaderExample
from kbqa.prompts import ANSWER_STOP


@dataclass
class ReaderScores:
    """Scores of one reader on a set of examples.

    Attributes:
        n: Examples scored.
        f1: Mean token F1 over all examples.
        em: Mean exact match over all examples.
        by_kind: ``kind -> {"n", "f1", "em", "abstained"}`` (``abstained``: share of replies
            that were abstentions).
        seconds_per_example: Median generation time.
        predictions: ``(qid, answer)`` per example, in order.
    """

    n: int = 0
    f1: float = 0.0
    em: float = 0.0
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds_per_example: float = 0.0
    predictions: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self, with_predictions: bool = False) -> dict[str, Any]:
        """Plain dict for JSON (predictions left out unless asked for)."""
        out = asdict(self)
        if not with_predictions:
            out.pop("predictions")
        return out


def score_reader(
    model: Any,
    examples: Sequence[ReaderExample],
    *,
    max_tokens: int = 32,
    ctx: Context | None = None,
    abstention_threshold: float = 0.0,
) -> ReaderScores:
    """Generate an answer for every example with ``model`` and score it.

    Args:
        model: A chat model (:class:`kbqa.llm.chat.LlamaCppChatModel` with the ``tuned`` prompt
            style, or a fake); each example's prompt is one human message.
        examples: Rendered examples (:mod:`kbqa.finetune.data`).
        max_tokens: Answer budget.
        ctx: Settings for the abstention check (default :class:`~kbqa.context.Context`).
        abstention_threshold: Abstain by the reader's probability of the phrase (0: greedy;
            :class:`kbqa.llm.grounding.AbstentionThreshold`).
    """
    from langchain_core.messages import HumanMessage

    ctx = ctx or Context(web_search="off")
    rows: dict[str, list[tuple[float, float, bool]]] = {}
    times, preds = [], []
    extra: dict[str, Any] = {}
    if abstention_threshold:
        extra = {
            "abstention_threshold": abstention_threshold,
            "abstention_phrase": ctx.abstention_phrase,
        }
    for ex in examples:
        started = time.perf_counter()
        reply = model.invoke(
            [HumanMessage(ex.prompt)], stop=ANSWER_STOP, max_tokens=max_tokens, **extra
        )
        times.append(time.perf_counter() - started)
        answer, abstained = judge(
            str(reply.content), ex.question, ctx.abstention_phrase, ctx.max_answer_chars
        )
        f1 = max_over_golds(token_f1, answer, ex.answers, abstained=abstained)
        em = max_over_golds(exact_match, answer, ex.answers, abstained=abstained)
        rows.setdefault(ex.kind, []).append((f1, em, abstained))
        preds.append((ex.qid, answer))
    every = [r for kind in rows.values() for r in kind]
    return ReaderScores(
        n=len(every),
        f1=statistics.fmean(r[0] for r in every) if every else 0.0,
        em=statistics.fmean(r[1] for r in every) if every else 0.0,
        by_kind={
            kind: {
                "n": len(rs),
                "f1": statistics.fmean(r[0] for r in rs),
                "em": statistics.fmean(r[1] for r in rs),
                "abstained": statistics.fmean(float(r[2]) for r in rs),
            }
            for kind, rs in sorted(rows.items())
        },
        seconds_per_example=statistics.median(times) if times else 0.0,
        predictions=preds,
    )


def load_reader(
    base_gguf: Path, adapter: Path | None, *, n_ctx: int = 4096, n_threads: int | None = None
) -> Any:
    """The base GGUF (plus a LoRA adapter GGUF) in llama.cpp, with the ``tuned`` prompt style."""
    from kbqa.llm.chat import LlamaCppChatModel

    return LlamaCppChatModel.from_path(
        base_gguf,
        model_name=base_gguf.name,
        prompt_style="tuned",
        n_ctx=n_ctx,
        n_threads=n_threads,
        lora_path=adapter,
    )


THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""Abstention thresholds scored for a tuned reader (``benchmarks/abstention_curve.py``, and
``kbqa finetune reader`` to choose its adapter's serving threshold)."""


MIN_UNANSWERABLE_ABSTENTION = 0.6
"""The serving threshold must keep at least this share of held-out unanswerable examples
abstaining. The BanglaRQA goal is 0.5 on the full graph, where abstention came out lower than on
Haque validation (0.756 -> 0.658 for the shipped adapter at 0.9, 0.600 -> 0.421 for its
15-minute checkpoint at 0.8; ``docs/finetune.md``), hence the margin."""


def choose_threshold(
    greedy_f1: float,
    curve: Sequence[CurvePoint],
    min_unanswerable_abstention: float = MIN_UNANSWERABLE_ABSTENTION,
) -> dict[str, Any]:
    """The serving choice for an adapter manifest: the threshold with the best answerable span
    F1 among those that still abstain on at least ``min_unanswerable_abstention`` of the
    unanswerable validation examples (overall F1 breaks ties). Greedy decoding (0) when no
    threshold keeps that floor.

    Overall F1 alone is a poor guide: on validation it can be flat across thresholds (0.47-0.49
    for the 15-minute checkpoint of the shipped run) while answerable F1 rises with the
    threshold and abstention falls.

    Returns:
        ``{"abstention_threshold": t, "why": ..., "greedy_f1": f1, "curve": [{"threshold",
        "f1", "span_f1", "abstained_answerable", "abstained_unanswerable"}, ...]}``.
    """
    kept = [p for p in curve if p.abstained_unanswerable >= min_unanswerable_abstention]
    best = max(kept, key=lambda p: (p.span_f1, p.f1), default=None)
    if not curve:
        threshold, why = 0.0, "greedy decoding: no validation examples to choose a threshold on"
    elif best is None:
        threshold = 0.0
        why = (
            f"greedy decoding: no threshold kept {min_unanswerable_abstention:.0%} of the "
            f"unanswerable validation examples abstaining (greedy F1 {greedy_f1:.3f})"
        )
    else:
        threshold = best.threshold
        why = (
            f"best answerable span F1 on the run's validation examples ({best.span_f1:.3f}; F1 "
            f"{best.f1:.3f}, greedy {greedy_f1:.3f}) among thresholds that abstain on at least "
            f"{min_unanswerable_abstention:.0%} of the unanswerable ones "
            f"({best.abstained_unanswerable:.1%} here)"
        )
    return {
        "abstention_threshold": threshold,
        "why": why,
        "greedy_f1": round(greedy_f1, 4),
        "curve": [{k: round(v, 4) for k, v in asdict(p).items()} for p in curve],
    }


@dataclass
class CurvePoint:
    """Scores at one abstention threshold (see :func:`abstention_curve`)."""

    threshold: float
    f1: float
    span_f1: float
    abstained_answerable: float
    abstained_unanswerable: float


def abstention_curve(
    model: Any,
    examples: Sequence[ReaderExample],
    thresholds: Sequence[float],
    *,
    max_tokens: int = 32,
    ctx: Context | None = None,
) -> list[CurvePoint]:
    """F1 and abstention rates as the abstention threshold varies, from one generation per
    example.

    Each example is generated once with the abstention phrase masked at the first token
    (threshold 1) while its probability ``p`` is recorded; at threshold ``t`` the reader
    abstains when ``p >= t`` and otherwise gives that generation (what
    :class:`kbqa.llm.grounding.AbstentionThreshold` does when serving).

    Args:
        model: A :class:`kbqa.llm.chat.LlamaCppChatModel` (plain-text prompt style).
        examples: Rendered examples; ``abstain`` ones count as unanswerable.
        thresholds: Values in [0, 1] to score.
    """
    from langchain_core.messages import HumanMessage

    ctx = ctx or Context(web_search="off")
    rows = []
    for ex in examples:
        reply = model.invoke(
            [HumanMessage(ex.prompt)],
            stop=ANSWER_STOP,
            max_tokens=max_tokens,
            abstention_threshold=1.0,
            abstention_phrase=ctx.abstention_phrase,
        )
        p = reply.response_metadata.get("abstention_probability") or 0.0
        answer, abstained = judge(
            str(reply.content), ex.question, ctx.abstention_phrase, ctx.max_answer_chars
        )
        rows.append((ex, p, answer, abstained))
    out: list[CurvePoint] = []
    if not rows:  # no validation examples (--val-examples 0)
        return out
    for t in thresholds:
        f1s, spans, abst_ans, abst_un = [], [], [], []
        for ex, p, answer, abstained in rows:
            gave_up = p >= t or abstained
            f1 = max_over_golds(token_f1, answer, ex.answers, abstained=gave_up)
            f1s.append(f1)
            if ex.kind == "abstain":
                abst_un.append(float(gave_up))
            else:
                abst_ans.append(float(gave_up))
                if ex.kind == "span":
                    spans.append(f1)
        out.append(
            CurvePoint(
                threshold=t,
                f1=statistics.fmean(f1s),
                span_f1=statistics.fmean(spans) if spans else 0.0,
                abstained_answerable=statistics.fmean(abst_ans) if abst_ans else 0.0,
                abstained_unanswerable=statistics.fmean(abst_un) if abst_un else 0.0,
            )
        )
    return out
