"""``kbqa finetune reranker``: an LLM-based cross-encoder trained on the CPU.

The recipe of FlagEmbedding's LLM rerankers (bge-reranker-v2-gemma): Gemma 3 270M with a LoRA
reads ``A: question``, ``B: passage`` and an instruction (:mod:`kbqa.prompts.rerank`) and
answers ``Yes`` or ``No``; a pair's score is the logit of ``" Yes"``. Here:

1. **Pairs** come from the training questions (Haque 2020) over the training knowledge base:
   for each question, the first chunk of its own document that holds the answer (``Yes``)
   against ``negatives`` hard negatives (``No``): the best-ranked chunks of the project's own
   fused retrieval pool (``pool``) that do not hold it. Documents are split for validation as
   the reader's are (:func:`kbqa.finetune.questions.split_by_document`).
2. **Training and export** are the reader's (:func:`kbqa.finetune.train.train_reader`, loss on
   the target tokens only; resumable checkpoints; :func:`kbqa.finetune.export.write_adapter`).
   FlagEmbedding's own decoder-reranker fine-tuning expects its distributed launcher and a
   GPU-sized group batch of one positive and many negatives in a listwise loss; the pointwise
   yes/no loss of the reader's trainer runs on 2 cores and resumes across machines.
3. **Validation** reranks the whole fused pool of held-out questions with the exported adapter
   in llama.cpp (:class:`kbqa.llm.rerank.LlamaCppReranker`) and records chunk recall@1/@3 and
   MRR@10 of the answer's chunk, fused against reranked, and milliseconds a question.

Serve it with ``--reranker OUT/adapter``.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kbqa.answers.language import detect_language
from kbqa.answers.normalize import answer_in_context
from kbqa.corpus.chunking import Chunk
from kbqa.finetune.config import ReaderConfig
from kbqa.finetune.examples import ReaderExample
from kbqa.finetune.questions import TrainingQuestion
from kbqa.prompts.rerank import IRRELEVANT, RELEVANT, render_rerank_prompt

ROLE = "reranker"


@dataclass(kw_only=True)
class RerankerConfig(ReaderConfig):
    """``kbqa finetune reranker`` settings: the reader's training settings, plus how pairs are
    drawn and how many held-out questions validate.

    Raises:
        ValueError: From :meth:`validate`, naming the bad field and value.
    """

    ROLE: ClassVar[str] = "reranker"

    out: str = field(default="runs/finetune-reranker", metadata={"help": "Output directory."})
    negatives: int = field(
        default=3, metadata={"help": "Hard negatives per question (chunks without the answer)."}
    )
    pool: int = field(
        default=20,
        metadata={
            "help": "Fused candidates per question: where hard negatives come from, and "
            "what validation reranks (serve with the same --rerank-pool)."
        },
    )
    val_questions: int = field(
        default=100, metadata={"help": "Held-out questions whose pools are reranked at the end."}
    )
    epochs: float = field(default=1.0, metadata={"help": "Passes over the training pairs."})

    READER_ONLY: ClassVar[tuple[str, ...]] = (
        "negative_ratio",
        "redacted_share",
        "yes_no_ratio",
        "train_k",
        "served_share",
        "paraphrase_share",
        "paraphrase_rules",
        "rule_kinds",
        "trap_ratio",
        "trap_rules",
        "k",
        "max_answer_tokens",
    )
    """The reader's example settings, which pairs do not use: ``kbqa finetune reranker``
    hides them from ``--help`` and refuses them."""

    def validate(self) -> None:
        """The reader's checks, and ``negatives``, ``pool`` >= 1, ``val_questions`` >= 0."""
        super().validate()
        for name in ("negatives", "pool"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)!r}")
        if self.val_questions < 0:
            raise ValueError(f"val_questions must be >= 0, got {self.val_questions!r}")

    def data_settings(self) -> dict[str, Any]:
        """The settings that decide the pairs."""
        keys = (
            "base_model",
            "embedder",
            "val_fraction",
            "max_questions",
            "seed",
            "negatives",
            "pool",
        )
        return {k: getattr(self, k) for k in keys}


Retrieve = Callable[[str, int], list[int]]
"""``(question, n) -> chunk ids`` of the fused pool, best first (no padding)."""


@dataclass
class PairStats:
    """Counts of the pair builder: questions, those with an answer chunk in their document
    (usable), pairs by split and target."""

    questions: int = 0
    usable: int = 0
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)

    def count(self, example: ReaderExample) -> None:
        """Add one pair."""
        split = self.by_kind.setdefault(example.split, {"yes": 0, "no": 0})
        split[example.kind] += 1


def answer_chunk(
    question: TrainingQuestion, chunks: Sequence[Chunk], by_doc: dict[str, list[int]]
) -> int | None:
    """The first chunk of the question's own document that holds a gold answer, if any."""
    q = question.question
    for cid in by_doc.get(q.doc_id or "", []):
        if answer_in_context(q.answers, chunks[cid].text):
            return cid
    return None


def build_pairs(
    questions: Sequence[TrainingQuestion],
    chunks: Sequence[Chunk],
    retrieve: Retrieve,
    splits: dict[str, str],
    *,
    negatives: int,
    pool: int,
) -> tuple[list[ReaderExample], PairStats]:
    """One ``Yes`` pair (the answer's chunk) and up to ``negatives`` ``No`` pairs (the best
    fused chunks without the answer) per usable question.

    Returns:
        The pairs (``kind`` ``yes``/``no``, ``target`` ``Yes``/``No``, ``context_chunk_ids``
        the pair's chunk) and their counts.
    """
    by_doc: dict[str, list[int]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c.chunk_id)
    out: list[ReaderExample] = []
    stats = PairStats()
    for tq in questions:
        q = tq.question
        stats.questions += 1
        gold = answer_chunk(tq, chunks, by_doc)
        if gold is None or not q.answers:
            continue
        stats.usable += 1
        split = splits.get(q.doc_id or q.qid, "train")
        hard = [
            c
            for c in retrieve(q.question, pool)
            if c != gold and not answer_in_context(q.answers, chunks[c].text)
        ]
        for kind, cid in [("yes", gold)] + [("no", c) for c in hard[:negatives]]:
            chunk = chunks[cid]
            example = ReaderExample(
                qid=f"{q.qid}#{kind}{cid}",
                kind=kind,
                split=split,
                doc_id=q.doc_id or "",
                question=q.question,
                prompt=render_rerank_prompt(q.question, chunk.title, chunk.text),
                target=RELEVANT if kind == "yes" else IRRELEVANT,
                answers=[],
                question_type="",
                language=detect_language(q.question),
                context_chunk_ids=[cid],
            )
            stats.count(example)
            out.append(example)
    return out, stats


def rank_metrics(ranked: Sequence[Sequence[bool]]) -> dict[str, float]:
    """Chunk recall@1, recall@3 and MRR@10 of the first relevant chunk, over the questions
    whose list holds one (``n``).

    Args:
        ranked: Per question, whether each chunk (best first) holds the answer.
    """
    with_gold = [r for r in ranked if any(r)]
    if not with_gold:
        return {"n": 0, "recall@1": 0.0, "recall@3": 0.0, "mrr@10": 0.0}
    first = [list(r).index(True) + 1 for r in with_gold]
    n = len(first)
    return {
        "n": n,
        "recall@1": round(sum(f <= 1 for f in first) / n, 4),
        "recall@3": round(sum(f <= 3 for f in first) / n, 4),
        "mrr@10": round(sum(1 / f for f in first if f <= 10) / n, 4),
    }


def validate_reranker(
    scorer: Any,
    questions: Sequence[TrainingQuestion],
    chunks: Sequence[Chunk],
    retrieve: Retrieve,
    pool: int,
) -> dict[str, Any]:
    """Rerank each question's fused pool with ``scorer`` (a
    :class:`~kbqa.retrieval.rerank.Reranker`) and compare the answer chunk's place before and
    after.

    Returns:
        ``{"fused": rank_metrics, "reranked": rank_metrics, "ms_per_question": median,
        "pool": pool}``.
    """
    fused: list[list[bool]] = []
    reranked: list[list[bool]] = []
    ms: list[float] = []
    for tq in questions:
        q = tq.question
        ids = retrieve(q.question, pool)
        holds = [bool(answer_in_context(q.answers, chunks[c].text)) for c in ids]
        t0 = time.perf_counter()
        scores = scorer.score(q.question, [(chunks[c].title, chunks[c].text) for c in ids])
        ms.append((time.perf_counter() - t0) * 1000)
        order = sorted(range(len(ids)), key=lambda i: -scores[i])
        fused.append(holds)
        reranked.append([holds[i] for i in order])
    return {
        "fused": rank_metrics(fused),
        "reranked": rank_metrics(reranked),
        "ms_per_question": round(statistics.median(ms), 1) if ms else None,
        "pool": pool,
    }


def val_questions_of(
    questions: Sequence[TrainingQuestion], splits: dict[str, str], n: int, seed: int
) -> list[TrainingQuestion]:
    """A seeded sample of ``n`` questions of the validation documents."""
    held = [q for q in questions if splits.get(q.question.doc_id or q.question.qid) == "val"]
    return random.Random(seed).sample(held, min(n, len(held)))


@dataclass
class _TrainingPairs:
    """The training questions (a seeded ``--max-questions`` sample), their document split, the
    pairs built from them over the index and the time that took, the index's chunks, and
    ``retrieve(question, n)``: the chunk ids of the first ``n`` hits."""

    questions: list[TrainingQuestion]
    splits: dict[str, str]
    pairs: list[ReaderExample]
    stats: PairStats
    seconds: float
    chunks: Sequence[Chunk]
    retrieve: Callable[[str, int], list[int]]


def _training_pairs(cfg: RerankerConfig, index_dir: Path) -> _TrainingPairs:
    """Load the questions, split them by document and build their pairs over the index."""
    from kbqa.finetune.questions import load_training_questions, split_by_document
    from kbqa.resources import load_retriever

    retriever = load_retriever(str(index_dir), cfg.embedder)
    chunks = retriever.chunks

    def retrieve(question: str, n: int) -> list[int]:
        return [h.chunk_id for h in retriever.retrieve(question, n, pad_previous=False)]

    questions = load_training_questions(Path(cfg.train))
    if cfg.max_questions:
        questions = random.Random(cfg.seed).sample(
            questions, min(cfg.max_questions, len(questions))
        )
    splits = split_by_document(questions, cfg.val_fraction, cfg.seed)
    started = time.perf_counter()
    pairs, stats = build_pairs(
        questions, chunks, retrieve, splits, negatives=cfg.negatives, pool=cfg.pool
    )
    seconds = round(time.perf_counter() - started, 1)
    return _TrainingPairs(questions, splits, pairs, stats, seconds, chunks, retrieve)


def run_reranker_finetune(cfg: RerankerConfig, command: str | None = None) -> dict[str, Any]:
    """Build the pairs, train, export and validate; returns the manifest (also written to
    ``OUT/adapter/manifest.json``, with ``"role": "reranker"``).

    Raises:
        ModelError, InputError: As ``kbqa finetune reader``'s pipeline.
        ValueError: No usable pair.
        KeyboardInterrupt: Ctrl-C during training, after the checkpoint is saved.
    """
    from kbqa.finetune.checkpoint import check_resumable, examples_fingerprint, read_cursor
    from kbqa.finetune.examples import write_examples
    from kbqa.finetune.pipeline import resume_point, start_run, train_and_export
    from kbqa.llm.rerank import LlamaCppReranker

    start = start_run(cfg, command)
    out = start.out
    data = _training_pairs(cfg, start.index_dir)
    pairs, stats = data.pairs, data.stats
    resume_from = resume_point(cfg)
    train = [p for p in pairs if p.split == "train"]
    if resume_from is not None:  # refuse other pairs before examples.jsonl is replaced
        check_resumable(
            read_cursor(resume_from),
            examples_fingerprint(train),
            len(train),
            cfg.batch_size * cfg.grad_accum,
            resume_from,
        )
    write_examples(out / "examples.jsonl", pairs)
    data_meta = {
        "questions": stats.questions,
        "usable": stats.usable,
        "by_kind": stats.by_kind,
        "seconds": data.seconds,
    }
    val = [p for p in pairs if p.split == "val"][: cfg.val_examples]
    if not train:
        raise ValueError(
            f"no usable training pair: {stats.usable} of {stats.questions} questions have an "
            "answer chunk in their document, none in the training documents"
        )
    held_out = val_questions_of(data.questions, data.splits, cfg.val_questions, cfg.seed)

    def validate(adapter: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        """Rerank the held-out questions' pools with the staged adapter in llama.cpp."""
        if not held_out:
            skipped = "no held-out question (--val-questions 0, or no validation document)"
            return {"skipped": skipped, "pool": cfg.pool}, {"rerank_pool": cfg.pool}
        scorer = LlamaCppReranker.from_path(start.base_path, adapter, n_threads=cfg.threads or None)
        validation = validate_reranker(scorer, held_out, data.chunks, data.retrieve, cfg.pool)
        return validation, {"rerank_pool": cfg.pool}

    return train_and_export(cfg, start, train, val, data_meta, validate, resume_from, ROLE)
