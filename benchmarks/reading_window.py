"""Does the reader abstain less on a short window around the answer than on the passage it read,
or on the question asked in another form?

A diagnostic for a run of the graph (``kbqa eval --out RUN``; ``records.jsonl`` with
``readings``). For each answerable question whose gold answer is in a passage the graph read
(the first reading whose chunks hold it), the served reader reads the same question three ways:

- ``full``: that reading's chunks, as the graph read them;
- ``oracle window``: the sentence holding the gold answer with one sentence either side (the
  gold is used to find it: an upper bound of what a window can do; skipped when no one sentence
  holds the answer);
- ``lexical window``: the sentence sharing the most words with the question, with one sentence
  either side (no gold used).

``--question-forms`` adds one way per form: the ``full`` context read with the question rewritten
toward the form the reader was trained on (:data:`FORMS`; a form that does not change the
question is skipped), and a ``rescued`` count: questions abstained on (or scored 0) in ``full``
that a form answers with F1 0.5 or more. It tells whether a retry that asks again in other
words could win back the reader's abstentions.

Each reading goes through :func:`kbqa.answers.reading.generate_answer` (the serving prompt,
budget and grounding) and the abstention check, abstaining at ``--threshold`` as the graph does.
Prints, per run and way: questions, share abstained, median abstention probability and answer
token F1 (an abstention scores 0). Asserts nothing.

    python benchmarks/reading_window.py --index /tmp/bn-idx \\
        runs/acceptance/fin/natural runs/acceptance/fin/banglarqa-s0:80 [--question-forms]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import regex

from kbqa.answers.abstention import judge
from kbqa.answers.language import detect_language, question_type
from kbqa.answers.reading import generate_answer
from kbqa.context import Context
from kbqa.errors import KBQAError
from kbqa.evals.metrics import answer_in_context, max_over_golds, token_f1
from kbqa.evals.run_dir import CONFIG_FILE, index_identity, load_run
from kbqa.finetune.paraphrase import ALL_RULES, MOVABLE_WH
from kbqa.llm.models import load_chat_model
from kbqa.prompts import Passage
from kbqa.resources import load_retriever
from kbqa.retrieval.rerank import split_sentences

WORD = regex.compile(r"\w+")
_B, _E = r"(?<![\p{L}\p{M}])", r"(?![\p{L}\p{M}])"
_KI = regex.compile(rf"{_B}কি{_E}")
_WHICH_NOUN = regex.compile(rf"{_B}কোন\s+[\p{{L}}\p{{M}}]+")


def _standard_ki(q: str) -> str:
    """``কি`` written ``কী`` (*what* in standard spelling, as Haque 2020 writes it), for a
    question that is not yes/no (there ``কি`` is the particle)."""
    return q if question_type(q) == "yes/no" else str(_KI.sub("কী", q))


def _which_noun(q: str) -> str:
    """``কোন X`` (*which X*) asked as ``কী`` (*what*): the reader matched the noun after
    ``কোন`` in the passage (``কোন শহর`` over a sentence without ``শহর`` abstained)."""
    return str(_WHICH_NOUN.sub("কী", q, count=1))


def _wh_first(q: str) -> str:
    """A question word standing inside the question moved to its front (``ডিনামাইট কে আবিষ্কার
    করেছিলেন?`` -> ``কে ডিনামাইট আবিষ্কার করেছিলেন?``)."""
    words = q.split()
    inner = [i for i, w in enumerate(words[1:-1], start=1) if w in MOVABLE_WH]
    if not inner:
        return q
    i = inner[0]
    return " ".join([words[i], *words[:i], *words[i + 1 :]])


FORMS: dict[str, Callable[[str], str]] = {
    "order": lambda q: ALL_RULES["order"](q, random.Random(0)) or q,
    "question word first": _wh_first,
    "standard ki": _standard_ki,
    "which noun": _which_noun,
}
"""Reading-time forms of a question, toward the training data's (the ``order`` rule of
:mod:`kbqa.finetune.paraphrase` moves a question word between the front and the end; the
others undo what people write and Haque 2020 writes less often)."""
RESCUED_F1 = 0.5


def window(sentences: list[str], i: int, n: int = 1) -> str:
    """Sentence ``i`` with ``n`` sentences either side, joined by spaces."""
    return " ".join(sentences[max(0, i - n) : i + n + 1])


def ways(index: Any, record: dict[str, Any]) -> dict[str, list[tuple[int, Passage]]] | None:
    """The three contexts of one record (see the module docstring), or None when the graph read
    no passage holding the gold answer."""
    gold = record["gold"]
    read = next(
        (
            r["chunk_ids"]
            for r in record.get("readings") or []
            if answer_in_context(gold, " ".join(index.chunks[c].text for c in r["chunk_ids"]))
        ),
        None,
    )
    if read is None:
        return None
    chunks = [index.chunks[c] for c in read]
    out = {"full": [(1, Passage(c.title, c.text)) for c in chunks]}
    holding = next((c for c in chunks if answer_in_context(gold, c.text)), None)
    if holding is not None:
        sentences = split_sentences(holding.text)
        at = next((i for i, s in enumerate(sentences) if answer_in_context(gold, s)), None)
        if at is not None:
            out["oracle window"] = [(1, Passage(holding.title, window(sentences, at)))]
    asked = {w for w in WORD.findall(record["question"]) if len(w) > 1}
    candidates = [(c, split_sentences(c.text)) for c in chunks]
    spots = [(c, sents, i) for c, sents in candidates for i in range(len(sents))]
    if spots:
        c, sents, i = max(spots, key=lambda s: len(asked & set(WORD.findall(s[1][s[2]]))))
        out["lexical window"] = [(1, Passage(c.title, window(sents, i)))]
    return out


def run_spec(spec: str) -> tuple[Path, int | None]:
    """``RUN`` or ``RUN:N`` as (run directory, N or None); argparse's type for the runs. A spec
    that names a directory as a whole is that directory (a name may hold a colon).

    Raises:
        argparse.ArgumentTypeError: N is not a positive integer, or RUN has no records.jsonl.
    """
    run, sep, limit = spec.rpartition(":")
    if Path(spec).is_dir() or not sep:
        run, sep, limit = spec, "", ""
    if sep and not (limit.isascii() and limit.isdigit() and int(limit) > 0):
        raise argparse.ArgumentTypeError(f"{spec!r}: N in RUN:N must be a positive integer")
    if not (Path(run) / "records.jsonl").is_file():
        raise argparse.ArgumentTypeError(f"{run!r} is not a run directory (no records.jsonl)")
    return Path(run), int(limit) if sep else None


def threshold(text: str) -> float:
    """argparse's type for ``--threshold``: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number in [0, 1]")
    return value


def record_problem(record: dict[str, Any], n_chunks: int) -> str | None:
    """Why a run's record cannot be read here (its gold, readings and chunk ids), or None."""
    if not isinstance(record.get("question"), str) or not record["question"].strip():
        return "no 'question' string, or an empty one"
    if not all(isinstance(g, str) for g in record["gold"]):
        return "'gold' is not a list of strings"
    readings = record.get("readings")
    if not isinstance(readings, list) or not readings:
        return "no 'readings' (a record of `kbqa eval --out` from a graph run has them)"
    for r in readings:
        ids = r.get("chunk_ids") if isinstance(r, dict) else None
        if not isinstance(ids, list) or not all(type(c) is int for c in ids):
            return "a reading without a list of integer 'chunk_ids'"
        if any(not 0 <= c < n_chunks for c in ids):
            return "its chunk ids are not those of --index"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "runs", nargs="+", type=run_spec, help="run directories, each RUN or RUN:N (first N kept)"
    )
    ap.add_argument("--index", required=True, help="the index the runs read")
    ap.add_argument(
        "--threshold", type=threshold, default=0.4, help="abstention threshold (default 0.4)"
    )
    ap.add_argument("--reader-adapter", default="", help="default: the packaged reader's")
    ap.add_argument(
        "--question-forms",
        action="store_true",
        help="also read the full context with the question in other forms (FORMS)",
    )
    args = ap.parse_args()
    try:
        index = load_retriever(args.index, "").index
    except KBQAError as exc:
        ap.error(str(exc))
    runs = []
    for run, limit in args.runs:
        if not (run / CONFIG_FILE).is_file():
            ap.error(f"{run} has no {CONFIG_FILE} (not a directory `kbqa eval --out` wrote)")
        try:
            records = load_run(run).records
            config = json.loads((run / CONFIG_FILE).read_text(encoding="utf-8"))
        except (KBQAError, OSError, ValueError) as exc:
            ap.error(f"{run}: {exc}")
        if not records:
            ap.error(f"{run} holds no records")
        if not isinstance(config, dict) or "index" not in config:
            ap.error(f"{run}/{CONFIG_FILE} records no index (not written by `kbqa eval --out`)")
        if config["index"] != index_identity(args.index):
            ap.error(f"{run} was read over another index than --index {args.index}")
        for record in records:
            problem = record_problem(record, len(index.chunks))
            if problem and record["answerable"] and record["gold"]:
                ap.error(f"{run} record {record['qid']}: {problem}")
        runs.append((run, limit, records))
    settings: dict[str, Any] = {"index_dir": args.index, "abstention_threshold": args.threshold}
    if args.reader_adapter:
        settings["reader_adapter"] = args.reader_adapter
    ctx = Context(**settings)
    try:
        model = load_chat_model(ctx.model, ctx.n_ctx, ctx.n_threads, adapter=ctx.reader_adapter)
    except KBQAError as exc:
        ap.error(str(exc))
    for run, limit, records in runs:
        scored: dict[str, list[tuple[bool, float, float]]] = {}
        kept = rescued = missed = 0
        for record in records:
            if not record["answerable"] or not record["gold"]:
                continue
            contexts = ways(index, record)
            if contexts is None:
                continue
            outcome: dict[str, float] = {}
            readings = [(name, record["question"], passages) for name, passages in contexts.items()]
            if args.question_forms:
                for form, rewrite in FORMS.items():
                    asked = rewrite(record["question"])
                    if asked != record["question"]:
                        readings.append((f"form: {form}", asked, contexts["full"]))
            for name, q, passages in readings:
                try:
                    reading = generate_answer(
                        model,
                        ctx,
                        q,
                        passages,
                        question_type=question_type(q),
                        language=detect_language(q),
                    )
                except ValueError as exc:  # a question too long for the context window
                    ap.error(f"{run} record {record['qid']}: {exc}")
                answer, abstained = judge(
                    reading.raw, q, ctx.abstention_phrase, ctx.max_answer_chars
                )
                p = reading.abstention_probability or 0.0
                abstained = abstained or p >= args.threshold
                f1 = max_over_golds(token_f1, answer, record["gold"], abstained=abstained)
                scored.setdefault(name, []).append((abstained, p, f1))
                outcome[name] = f1
            if outcome.get("full", 0.0) == 0.0 and any(
                f >= RESCUED_F1 for name, f in outcome.items() if name.startswith("form: ")
            ):
                rescued += 1
            if outcome.get("full", 0.0) == 0.0:
                missed += 1
            kept += 1
            if limit and kept >= limit:
                break
        if not scored:
            print(f"{run.name:14s} no answerable question with its gold answer in a passage read")
        for name, rows in scored.items():
            print(
                f"{run.name:14s} {name:15s} n={len(rows):3d} "
                f"abstained {sum(a for a, _, _ in rows) / len(rows):.3f} "
                f"median p {statistics.median(p for _, p, _ in rows):.3f} "
                f"F1 {statistics.fmean(f for *_, f in rows):.3f}"
            )
        if args.question_forms and scored:
            print(
                f"{run.name:14s} rescued by a form: {rescued} of the {missed} questions "
                f"the full reading missed (F1 0 there, {RESCUED_F1} or more in a form)"
            )


if __name__ == "__main__":
    main()
