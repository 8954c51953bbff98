"""Draft evaluation questions for a new knowledge base (``kbqa eval generate``).

Type-aware RAG seed: candidate QA pairs generated with LLM assistance, then reviewed by a person.
Chunks are sampled from an index; the LLM writes a question and a short answer; a pair is kept
only when the answer occurs verbatim in the chunk and not in the document title (a question
answerable from the title alone teaches nothing about retrieval). Kept pairs are written in the
question-file format with ``needs_review: true``.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import regex

from kbqa.answers.language import detect_language
from kbqa.answers.normalize import normalize_answer
from kbqa.context import Context
from kbqa.corpus.chunking import Chunk
from kbqa.prompts import PLAIN_STYLES
from kbqa.prompts.question_generation import QG_STOP, render_question_prompt
from kbqa.resources import chat_model_for, retriever_for

MIN_CHUNK_CHARS = 200
MAX_ANSWER_WORDS = 8
ATTEMPTS_PER_QUESTION = 3
_PAIR = regex.compile(
    r"^\s*(?:Question:)?\s*(?P<q>.+?)\s*\n+\s*Answer\s*[:ঃ]\s*(?P<a>.+?)\s*$", regex.S | regex.I
)


def parse_pair(reply: str) -> tuple[str, str] | None:
    """``(question, answer)`` from a ``Question: ... / Answer: ...`` reply, else None."""
    m = _PAIR.match(reply.strip())
    if not m:
        return None
    q = " ".join(m["q"].split())
    a = m["a"].strip().splitlines()[0].strip().strip("\"'“”‘’`*").rstrip("।.")
    return (q, a) if q and a else None


def check_pair(question: str, answer: str, chunk_text: str, title: str) -> str | None:
    """Why a generated pair is rejected, or None when it is kept.

    Reasons: ``answer not in chunk`` (not a verbatim span), ``answer in title`` (answerable from
    the title alone), ``answer too long``, ``question is the answer``, ``not a question``.
    """
    if answer not in chunk_text:
        return "answer not in chunk"
    if len(answer.split()) > MAX_ANSWER_WORDS:
        return "answer too long"
    na, nt = normalize_answer(answer), normalize_answer(title)
    if not na or (nt and (na in nt or nt == normalize_answer(question))):
        return "answer in title"
    if na in normalize_answer(question):
        return "question is the answer"
    if len(question) < 8:
        return "not a question"
    return None


def generate_questions(
    ctx: Context, n: int, out: str | Path, *, seed: int = 0, progress: bool = True
) -> dict[str, Any]:
    """Sample chunks of ``ctx.index_dir``, draft up to ``n`` QA pairs, write them to ``out``.

    Args:
        ctx: Index, model and generation settings.
        n: Pairs wanted (> 0); at most ``3n`` chunks are tried.
        out: Question file to write (JSON Lines, written atomically).
        seed: Chunk sampling seed.
        progress: Show a progress bar.

    Returns:
        ``{"kept", "tried", "rejected": {reason: count}, "seconds"}``. Nothing is written when
        no pair is kept.

    Raises:
        ValueError: ``n`` <= 0.
    """
    from tqdm import tqdm

    if n <= 0:
        raise ValueError(f"n must be > 0, got {n}")
    chunks = retriever_for(ctx).chunks
    model = chat_model_for(ctx)
    style = getattr(model, "prompt_style", "completion")
    candidates = [c for c in chunks if len(c.text) >= MIN_CHUNK_CHARS] or list(chunks)
    order = random.Random(seed).sample(
        range(len(candidates)), min(len(candidates), n * ATTEMPTS_PER_QUESTION)
    )
    kept: list[dict[str, Any]] = []
    rejected: Counter[str] = Counter()
    used_docs: set[str] = set()
    t0 = time.perf_counter()
    bar = tqdm(total=n, desc="generate", unit="q", disable=not progress)
    for i in order:
        if len(kept) >= n:
            break
        c = candidates[i]
        if c.doc_id in used_docs:  # one question per document keeps the set diverse
            continue
        pair, reason = _draft(model, style, c)
        if reason or pair is None:
            rejected[reason or "unparsable reply"] += 1
            continue
        used_docs.add(c.doc_id)
        kept.append(_question_record(c, pair, ctx.model))
        bar.update(1)
    bar.close()
    tried = len(kept) + sum(rejected.values())
    stats = {
        "kept": len(kept),
        "tried": tried,
        "rejected": dict(rejected),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if not kept:  # never replace a file with nothing
        return stats
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8"
    )
    tmp.replace(p)
    return stats


def _draft(model: Any, style: str, chunk: Chunk) -> tuple[tuple[str, str] | None, str | None]:
    """Ask ``model`` for a QA pair on ``chunk``: ``(pair, None)`` when the pair passes
    :func:`check_pair`, else ``(pair or None, reason)``."""
    msgs = render_question_prompt(
        chunk.title, chunk.text, style=style, language=detect_language(chunk.text)
    )
    stop = QG_STOP if style in PLAIN_STYLES else None
    reply = str(model.invoke(msgs, stop=stop, max_tokens=96).content)
    pair = parse_pair(reply)
    if pair is None:
        return None, "unparsable reply"
    return pair, check_pair(pair[0], pair[1], chunk.text, chunk.title)


def _question_record(chunk: Chunk, pair: tuple[str, str], model: str) -> dict[str, Any]:
    """A drafted pair as a question-file row (kbqa's question-file format), ``needs_review``."""
    return {
        "qid": f"gen-{chunk.chunk_id}",
        "question": pair[0],
        "answers": [pair[1]],
        "doc_id": chunk.doc_id,
        "answerable": True,
        "qtype": None,
        "needs_review": True,
        "chunk_id": chunk.chunk_id,
        "source": f"kbqa eval generate ({model})",
    }
