"""Fit the cross-check's learned arbiter (:mod:`kbqa.answers.arbiter`) on an evaluation run's
records, and replay it on other runs.

    # the development questions: BanglaRQA validation less the questions of the reporting runs
    python benchmarks/train_arbiter.py pool ../shared/data/bn/banglarqa_validation.qa.jsonl \
        runs/acceptance/def11/banglarqa-s0 runs/acceptance/def11/banglarqa-s1 \
        runs/acceptance/def11/banglarqa-new --out runs/arb-pool.qa.jsonl
    kbqa eval run runs/arb-pool.qa.jsonl --index /tmp/bn-idx --out runs/arb-pool
    # fit on that run's records, write the weights into the package
    python benchmarks/train_arbiter.py fit runs/arb-pool --index /tmp/bn-idx
    # what it would have changed in runs it never saw (no model is called)
    python benchmarks/train_arbiter.py replay runs/acceptance/def11/banglarqa-s1 ... --index /tmp/bn-idx

A record the arbiter can be asked about is a Bangla one whose reader answered (its ``generate``
stage did not abstain) and whose extractor, rerun here on the same context chunks
(:func:`kbqa.answers.extract.extract_answer`), finds a different span. Its label is which of the
two spans scores the higher token F1 against the gold answers (both shaped as ``finalize`` shapes
an answer: :func:`~kbqa.answers.cleanup.postprocess`, :func:`~kbqa.answers.cleanup.drop_year_word`);
pairs that score the same are left out, and each pair weighs its F1 difference, so the fit
maximises the F1 the choice gains. Logistic regression (scikit-learn, L2) on standardised
features; ``C`` and the threshold are chosen by cross-validation grouped by passage
(``GroupKFold`` over the gold document), as the pair with the highest mean F1 gain.

The records must come from questions no reported figure is taken from: the project fits it on
BanglaRQA validation questions outside the samples of seeds 0, 1 and 7 (the development set;
``docs/finetune-log.md``). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kbqa.answers.arbiter import FEATURES, WEIGHTS_PATH, Arbiter, arbiter_features, differ
from kbqa.answers.cleanup import drop_year_word, postprocess
from kbqa.answers.extract import Extraction, extract_answer
from kbqa.context import Context
from kbqa.errors import InputError
from kbqa.evals.metrics import max_over_golds, token_f1
from kbqa.resources import retriever_for

C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
THRESHOLDS = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)


@dataclass
class Pair:
    qid: str
    doc: str
    answerable: bool
    features: np.ndarray
    reader_f1: float
    extractor_f1: float
    final_f1: float  # the run's own score of the record (what the graph answered)


def _shaped(answer: str, question_type: str) -> str:
    return drop_year_word(postprocess(answer, question_type, [], "bn"))


def pairs_of(run: Path, chunks: list) -> Iterator[Pair]:  # type: ignore[type-arg]
    """The arbiter's pairs in ``run/records.jsonl`` (see the module docstring)."""
    path = run / "records.jsonl"
    if not path.is_file():
        raise InputError(f"{path}: no records.jsonl (give an evaluation run's folder)")
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        stages = r.get("stage_answers") or []
        if r.get("language") != "bn" or not stages or stages[0]["stage"] != "generate":
            continue
        if stages[0]["abstained"]:
            continue
        ids = r.get("context_chunk_ids") or []
        qtype = r.get("question_type", "other")
        found: Extraction | None = extract_answer(
            r["question"], qtype, [(c, chunks[c].text) for c in ids], "bn"
        )
        answer = str(stages[0]["answer"])
        if found is None or not differ(answer, found):
            continue
        golds = r.get("gold") or []
        x = arbiter_features(r["question"], qtype, answer, r.get("abstention_probability"), found)
        yield Pair(
            qid=r["qid"],
            doc=str(r.get("gold_doc_id") or r["qid"]),
            answerable=bool(r.get("answerable")),
            features=x,
            reader_f1=max_over_golds(token_f1, _shaped(answer, qtype), golds, abstained=False),
            extractor_f1=max_over_golds(
                token_f1, _shaped(found.answer, qtype), golds, abstained=False
            ),
            final_f1=float(r["scores"]["token_f1"]),
        )


def _fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float) -> Arbiter:
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=2000)
    model.fit((x - mean) / scale, y, sample_weight=w)
    return Arbiter(mean, scale, model.coef_[0].astype(np.float64), float(model.intercept_[0]))


def _gain(arb: Arbiter, pairs: list[Pair], threshold: float) -> float:
    """Sum of F1 changed over ``pairs`` when the extractor's span is taken above ``threshold``
    (answerable pairs; an unanswerable question's score does not depend on the span)."""
    return sum(
        p.extractor_f1 - p.reader_f1
        for p in pairs
        if p.answerable and arb.probability(p.features) > threshold
    )


def fit(pairs: list[Pair], folds: int) -> tuple[Arbiter, dict[str, object]]:
    from sklearn.model_selection import GroupKFold

    labelled = [p for p in pairs if p.answerable and p.reader_f1 != p.extractor_f1]
    if len(labelled) < 2 * folds:
        raise InputError(f"only {len(labelled)} labelled pairs: too few to fit")
    x = np.stack([p.features for p in labelled])
    y = np.asarray([p.extractor_f1 > p.reader_f1 for p in labelled], dtype=int)
    w = np.asarray([abs(p.extractor_f1 - p.reader_f1) for p in labelled])
    groups = [p.doc for p in labelled]
    gains: dict[tuple[float, float], float] = {}
    for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
        for c in C_GRID:
            arb = _fit(x[train], y[train], w[train], c)
            for t in THRESHOLDS:
                gains[(c, t)] = gains.get((c, t), 0.0) + _gain(arb, [labelled[i] for i in test], t)
    (c, t), best = max(gains.items(), key=lambda kv: (kv[1], -kv[0][0]))
    arb = _fit(x, y, w, c)
    arb = Arbiter(arb.mean, arb.scale, arb.weights, arb.bias, threshold=t)
    answerable = sum(p.answerable for p in pairs)
    return arb, {
        "pairs": len(pairs),
        "labelled_pairs": len(labelled),
        "extractor_better": int(y.sum()),
        "reader_better": int(len(y) - y.sum()),
        "C": c,
        "threshold": t,
        "cross_validated_f1_gain_per_answerable_pair": round(best / max(answerable, 1), 4),
    }


def replay(arb: Arbiter, run: Path, chunks: list) -> dict[str, object]:  # type: ignore[type-arg]
    """What the arbiter would change in ``run``: the questions whose final answer it would
    replace by the extractor's span, and the answerable F1 before and after (replayed from
    records: the graph's grounding is not redone)."""
    recs = [json.loads(x) for x in (run / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    scores = {r["qid"]: float(r["scores"]["token_f1"]) for r in recs if r.get("answerable")}
    before = sum(scores.values())
    after = dict(scores)
    raised = lowered = changed = 0
    for p in pairs_of(run, chunks):
        if not p.answerable or arb.probability(p.features) <= arb.threshold:
            continue
        changed += 1
        after[p.qid] = p.extractor_f1
        raised += p.extractor_f1 > p.final_f1
        lowered += p.extractor_f1 < p.final_f1
    n = max(len(scores), 1)
    return {
        "run": str(run),
        "answerable": len(scores),
        "answerable_f1_before": round(before / n, 3),
        "answerable_f1_after": round(sum(after.values()) / n, 3),
        "changed": changed,
        "raised": raised,
        "lowered": lowered,
    }


def _chunks(index: str) -> list:  # type: ignore[type-arg]
    return retriever_for(Context(index_dir=index)).chunks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit", help="fit on runs' records and write the weights")
    f.add_argument("runs", nargs="+", type=Path)
    f.add_argument("--index", required=True, help="the index the runs read")
    f.add_argument("--out", type=Path, default=WEIGHTS_PATH)
    f.add_argument("--folds", type=int, default=5)
    r = sub.add_parser("replay", help="what the shipped (or --weights) arbiter changes in runs")
    r.add_argument("runs", nargs="+", type=Path)
    r.add_argument("--index", required=True)
    r.add_argument("--weights", type=Path, default=WEIGHTS_PATH)
    pl = sub.add_parser("pool", help="write the questions of a file that no given run asked")
    pl.add_argument("questions", type=Path)
    pl.add_argument("runs", nargs="+", type=Path, help="runs whose questions are left out")
    pl.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.command == "pool":
        asked = {
            json.loads(line)["qid"]
            for run in args.runs
            for line in (run / "records.jsonl").read_text(encoding="utf-8").splitlines()
        }
        kept = [
            line
            for line in args.questions.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line)["qid"] not in asked
        ]
        args.out.write_text("\n".join(kept) + "\n", encoding="utf-8")
        print(f"{len(kept)} questions written to {args.out} ({len(asked)} left out)")
        return 0
    chunks = _chunks(args.index)
    if args.command == "fit":
        pairs = [p for run in args.runs for p in pairs_of(run, chunks)]
        arb, figures = fit(pairs, args.folds)
        sources = []
        for run in args.runs:
            config = json.loads((run / "config.json").read_text(encoding="utf-8"))
            sources.append(
                {
                    "questions": Path(config["questions"]).name,
                    "questions_sha256": config.get("questions_sha256", ""),
                    "records_sha256": hashlib.sha256(
                        (run / "records.jsonl").read_bytes()
                    ).hexdigest(),
                    "model": config.get("context", {}).get("model", ""),
                }
            )
        manifest = {
            "what": "kbqa cross-check arbiter: logistic regression choosing between the "
            "reader's span and the pattern extractor's (kbqa.answers.arbiter)",
            "command": "python benchmarks/train_arbiter.py fit RUN --index INDEX",
            "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "trained_on": sources,
            "figures": figures,
            "model": arb.to_json(),
        }
        args.out.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", "utf-8")
        print(json.dumps(figures, indent=2))
        for name, weight in sorted(
            zip(FEATURES, arb.weights, strict=True), key=lambda t: -abs(t[1])
        ):
            print(f"  {weight:+.3f}  {name}")
        return 0
    data = json.loads(args.weights.read_text(encoding="utf-8"))
    arb = Arbiter.from_json(data["model"])
    for run in args.runs:
        print(json.dumps(replay(arb, run, chunks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
