"""``kbqa finetune verifier``: HybridRAG-BN's LoRA verifier, trained on the tuned reader's own
answers.

HybridRAG-BN fine-tuned a copy of its generator to confirm or correct the answer in at most 30
tokens; it changed 48 of 1,500 answers and added 0.013-0.026 F1. Here:

1. **Reader examples** are built as ``kbqa finetune reader`` builds them (``OUT/reader/``: the
   same split by document, negatives and yes/no examples; the redacted negatives are left out,
   since the verify node reads whole chunks).
2. **Candidates** are the tuned reader's answers to them, generated as served (constrained
   grounding, the adapter's abstention threshold) and kept in ``OUT/candidates.jsonl``, so the
   verifier learns the mistakes the reader actually makes.
3. **Verifier examples** render the verify node's prompt (:func:`kbqa.prompts.verify.
   fit_verify_prompt`: the reader's passages budgeted in the verifier's tokens, the typed
   extractor hint, the candidate); the target is the gold answer: the candidate itself when it
   is right (``keep``), the gold when it is wrong (``fix``) or an abstention on an answerable
   question (``answer``), the abstention phrase when the context lacks the answer (``abstain``).
4. **Training and export** are the reader's (:mod:`kbqa.finetune.train`,
   :func:`kbqa.finetune.export.write_adapter`); validation runs the exported adapter in
   llama.cpp and applies the verify node's rule (:func:`kbqa.answers.verification.
   apply_verification`), counting the answers it changed, helped and hurt.

Serve it with ``--verify --verifier-adapter OUT/adapter``.
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kbqa.answers.abstention import judge
from kbqa.answers.extract import typed_hint
from kbqa.answers.reading import generate_answer
from kbqa.answers.verification import apply_verification
from kbqa.context import Context
from kbqa.corpus.chunking import Chunk
from kbqa.evals.metrics import exact_match, max_over_golds, token_f1
from kbqa.finetune.config import ReaderConfig
from kbqa.finetune.examples import PROMPT_STYLE, ReaderExample, write_examples
from kbqa.prompts import ABSTENTION_PHRASE, ANSWER_STOP, Passage, prompt_text
from kbqa.prompts.budget import TokenCounter, prompt_budget
from kbqa.prompts.verify import fit_verify_prompt

log = logging.getLogger("kbqa.finetune")

CANDIDATES_FILE = "candidates.jsonl"


@dataclass(kw_only=True)
class VerifierConfig(ReaderConfig):
    """``kbqa finetune verifier`` settings: the reader's, plus the reader whose answers are the
    candidates and the verifier's answer budget.

    Raises:
        ValueError: From :meth:`validate`, naming the bad field and value.
    """

    ROLE: ClassVar[str] = "verifier"

    out: str = field(default="runs/finetune-verifier", metadata={"help": "Output directory."})
    reader_model: str = field(
        default="gemma3-270m-reader",
        metadata={
            "help": "The reader whose answers are the candidates (registered name or "
            ".gguf), served as `kbqa ask` serves it."
        },
    )
    reader_adapter: str = field(
        default="",
        metadata={
            "help": "Its LoRA adapter (a `kbqa finetune reader` directory); empty: the model's own."
        },
    )
    max_verify_tokens: int = field(
        default=30, metadata={"help": "The verifier's answer budget (HybridRAG-BN: 30)."}
    )
    train_k: int = field(
        default=0,
        metadata={
            "help": "Hits in a reader example (0: as served; the verifier checks the "
            "reader as it is served)."
        },
    )
    paraphrase_share: float = field(
        default=0.0, metadata={"help": "Share of questions asked in another form by rule."}
    )

    def validate(self) -> None:
        super().validate()
        if self.max_verify_tokens <= 0:
            raise ValueError(f"max_verify_tokens must be positive, got {self.max_verify_tokens!r}")
        if self.n_ctx < self.max_verify_tokens + 64:
            raise ValueError(
                f"n_ctx ({self.n_ctx}) must be at least max_verify_tokens "
                f"({self.max_verify_tokens}) + 64 to leave room for a prompt"
            )


def reader_passages(chunks: Sequence[Chunk], chunk_ids: Sequence[int]) -> list[tuple[int, Passage]]:
    """``(rank, passage)`` pairs of the chunks a reader example shows, ranked by position (as
    the verify node ranks chunks it cannot find among the retrieved records)."""
    return [(i, Passage(chunks[c].title, chunks[c].text)) for i, c in enumerate(chunk_ids, 1)]


def reader_candidates(
    reader: Any,
    examples: Sequence[ReaderExample],
    chunks: Sequence[Chunk],
    ctx: Context,
    path: Path,
) -> dict[str, tuple[str, bool]]:
    """The reader's judged answer to every example, generated as the generate node does
    (:func:`~kbqa.answers.reading.generate_answer`: the same prompt fit, grounding and
    threshold). Answers already in ``path`` (JSON Lines ``{qid, answer, abstained}``) are reused
    and new ones appended as they come, so an interrupted run resumes.

    Returns:
        ``qid -> (answer, abstained)``.
    """
    from tqdm import tqdm

    done: dict[str, tuple[str, bool]] = {}
    if path.is_file():
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["qid"]] = (row["answer"], bool(row["abstained"]))
    todo = [ex for ex in examples if ex.qid not in done]
    with path.open("a", encoding="utf-8") as fh:
        for ex in tqdm(todo, desc="reader answers", unit="q", disable=not todo):
            raw, *_ = generate_answer(
                reader,
                ctx,
                ex.question,
                reader_passages(chunks, ex.context_chunk_ids),
                question_type=ex.question_type,
                language=ex.language,
            )
            answer, abstained = judge(raw, ex.question, ctx.abstention_phrase, ctx.max_answer_chars)
            done[ex.qid] = (answer, abstained)
            fh.write(
                json.dumps(
                    {"qid": ex.qid, "answer": answer, "abstained": abstained}, ensure_ascii=False
                )
                + "\n"
            )
            fh.flush()
    return done


def verifier_example(
    ex: ReaderExample,
    candidate: str,
    abstained: bool,
    chunks: Sequence[Chunk],
    counter: TokenCounter,
    budget: int,
) -> ReaderExample:
    """The verifier example for a reader example and the reader's judged answer to it.

    The prompt is the verify node's (:func:`~kbqa.prompts.verify.fit_verify_prompt` with the
    reader's passages, the typed extractor hint and the candidate, the abstention phrase when
    the reader abstained). Kinds and targets: see :data:`kbqa.finetune.examples.VERIFIER_KINDS`.
    """
    shown = ABSTENTION_PHRASE if abstained else candidate
    hint = typed_hint(
        ex.question,
        ex.question_type,
        [(c, chunks[c].text) for c in ex.context_chunk_ids],
        ex.language,
    )
    messages, kept = fit_verify_prompt(
        counter,
        ex.question,
        reader_passages(chunks, ex.context_chunk_ids),
        shown,
        budget,
        hint=hint,
        style=PROMPT_STYLE,
    )
    if ex.kind == "abstain":
        kind, target = "abstain", ABSTENTION_PHRASE
    elif abstained:
        kind, target = "answer", ex.target
    elif max_over_golds(exact_match, candidate, ex.answers, abstained=False):
        kind, target = "keep", candidate
    else:
        kind, target = "fix", ex.target
    return ReaderExample(
        ex.qid,
        kind,
        ex.split,
        ex.doc_id,
        ex.question,
        prompt_text(messages),
        target,
        list(ex.answers),
        ex.question_type,
        ex.language,
        [ex.context_chunk_ids[i] for i in kept],
        ex.gold_rank,
        ex.gold_inserted,
        shown,
    )


@dataclass
class VerifierScores:
    """A verifier on held-out examples, under the verify node's rule.

    Attributes:
        n: Examples scored.
        f1_before: Mean token F1 of the candidates (an ``abstain`` example scores 1 when
            abstained).
        f1_after: Mean token F1 after verification.
        changed: Answers the verification changed.
        helped: Changes that raised F1.
        hurt: Changes that lowered F1.
        ungrounded: Corrections refused for being in no passage.
        by_kind: ``kind -> {"n", "f1_before", "f1_after", "changed"}``.
        seconds_per_example: Median verifier time.
    """

    n: int = 0
    f1_before: float = 0.0
    f1_after: float = 0.0
    changed: int = 0
    helped: int = 0
    hurt: int = 0
    ungrounded: int = 0
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds_per_example: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)


def score_verifier(
    verifier: Any,
    examples: Sequence[ReaderExample],
    chunks: Sequence[Chunk],
    *,
    max_tokens: int = 30,
    ctx: Context | None = None,
) -> VerifierScores:
    """Verify every example's candidate with ``verifier`` and score before and after.

    Args:
        verifier: A chat model with the ``tuned`` prompt style; each example's prompt is sent as
            one human message.
        examples: Verifier examples (:func:`verifier_example`).
        chunks: The training index's chunks (the passages the prompts hold).
        max_tokens: The verifier's answer budget.
        ctx: Settings for the abstention check (default :class:`~kbqa.context.Context`).
    """
    from langchain_core.messages import HumanMessage

    ctx = ctx or Context(web_search="off")
    rows: dict[str, list[tuple[float, float, bool]]] = {}
    times: list[float] = []
    scores = VerifierScores()
    for ex in examples:
        started = time.perf_counter()
        reply = verifier.invoke([HumanMessage(ex.prompt)], stop=ANSWER_STOP, max_tokens=max_tokens)
        times.append(time.perf_counter() - started)
        verified, verified_abstained = judge(
            str(reply.content), ex.question, ctx.abstention_phrase, ctx.max_answer_chars
        )
        candidate_abstained = ex.candidate == ABSTENTION_PHRASE
        verdict = apply_verification(
            ex.candidate,
            candidate_abstained,
            verified,
            verified_abstained,
            [chunks[c].text for c in ex.context_chunk_ids],
        )
        before = max_over_golds(token_f1, ex.candidate, ex.answers, abstained=candidate_abstained)
        after = max_over_golds(token_f1, verdict.answer, ex.answers, abstained=verdict.abstained)
        rows.setdefault(ex.kind, []).append((before, after, verdict.changed))
        scores.changed += verdict.changed
        scores.helped += verdict.changed and after > before
        scores.hurt += verdict.changed and after < before
        scores.ungrounded += verdict.status == "verify: ungrounded"
    every = [r for rs in rows.values() for r in rs]
    scores.n = len(every)
    if every:
        scores.f1_before = statistics.fmean(r[0] for r in every)
        scores.f1_after = statistics.fmean(r[1] for r in every)
        scores.seconds_per_example = statistics.median(times)
    scores.by_kind = {
        kind: {
            "n": len(rs),
            "f1_before": statistics.fmean(r[0] for r in rs),
            "f1_after": statistics.fmean(r[1] for r in rs),
            "changed": sum(r[2] for r in rs),
        }
        for kind, rs in sorted(rows.items())
    }
    return scores


def run_verifier_finetune(cfg: VerifierConfig, command: str | None = None) -> dict[str, Any]:
    """Run the whole pipeline; returns the manifest (also written to ``OUT/adapter``).

    Raises:
        ModelError: The base or the reader cannot be loaded.
        InputError: A bad training or KB file (the message names it).
        ValueError: No usable example.
        KeyboardInterrupt: Ctrl-C during training, after the checkpoint is saved.
    """
    from kbqa.finetune.base import TokenizerCounter
    from kbqa.finetune.evaluate import load_reader
    from kbqa.finetune.pipeline import (
        resume_point,
        start_run,
        train_and_export,
        training_context,
    )
    from kbqa.finetune.reader import prepare_examples, val_sample
    from kbqa.llm.models import check_model_name, load_chat_model
    from kbqa.resources import retriever_for

    check_model_name(cfg.reader_model, cfg.reader_adapter)  # before hours of work, not after
    start = start_run(cfg, command)
    out, tokenizer, index_dir = start.out, start.tokenizer, start.index_dir
    (out / "reader").mkdir(exist_ok=True)
    reader_examples, reader_meta = prepare_examples(cfg, out / "reader", tokenizer, index_dir)
    # the verify node reads whole chunks: a redacted negative would be another question there
    usable = [e for e in reader_examples if not e.qid.endswith("#cut")]
    wanted = [e for e in usable if e.split == "train"]
    wanted += val_sample(usable, cfg.val_examples, cfg.seed)
    ctx = training_context(cfg, index_dir)
    chunks = retriever_for(ctx).chunks
    reader = load_chat_model(cfg.reader_model, cfg.n_ctx, cfg.threads, adapter=cfg.reader_adapter)
    started = time.perf_counter()
    candidates = reader_candidates(reader, wanted, chunks, ctx, out / CANDIDATES_FILE)
    candidate_seconds = time.perf_counter() - started
    counter = TokenizerCounter(tokenizer, PROMPT_STYLE)
    budget = prompt_budget(cfg.n_ctx, cfg.max_verify_tokens)
    examples = [verifier_example(e, *candidates[e.qid], chunks, counter, budget) for e in wanted]
    write_examples(out / "examples.jsonl", examples)
    train = [e for e in examples if e.split == "train"]
    val = [e for e in examples if e.split == "val"]
    if not train:
        raise ValueError("no usable training example (see OUT/reader/data.json)")
    data_meta = _data_record(cfg, examples, reader_meta, len(wanted), candidate_seconds)
    (out / "data.json").write_text(json.dumps(data_meta, ensure_ascii=False, indent=1), "utf-8")

    def validate(adapter: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        """Score the staged adapter in llama.cpp."""
        verifier = load_reader(
            start.base_path, adapter, n_ctx=cfg.n_ctx, n_threads=cfg.threads or None
        )
        scores = score_verifier(verifier, val, chunks, max_tokens=cfg.max_verify_tokens, ctx=ctx)
        return scores.to_dict(), {}

    resume_from = resume_point(cfg)
    return train_and_export(cfg, start, train, val, data_meta, validate, resume_from, "verifier")


def _data_record(
    cfg: VerifierConfig,
    examples: Sequence[ReaderExample],
    reader_meta: dict[str, Any],
    n_candidates: int,
    candidate_seconds: float,
) -> dict[str, Any]:
    """``data.json``: the reader examples' counts, the verifier examples by split and kind, and
    the reader that wrote the candidates (portable paths) in how many seconds."""
    from kbqa.finetune.portable import portable_path

    kinds = {
        split: dict(Counter(e.kind for e in examples if e.split == split))
        for split in ("train", "val")
    }
    return {
        "reader_examples": {k: v for k, v in reader_meta.items() if k != "settings"},
        "by_kind": kinds,
        "candidates": {
            "reader": portable_path(cfg.reader_model),
            "reader_adapter": portable_path(cfg.reader_adapter),
            "n": n_candidates,
            "seconds": round(candidate_seconds, 1),
        },
        "usable": len(examples),
        "questions": reader_meta.get("questions"),
    }
