"""Train the Bangla yes/no question classifier (:mod:`kbqa.answers.yes_no`) and write its weights
and manifest into the package.

    python benchmarks/train_yes_no.py            # ../shared/data or $KBQA_DATA_DIR

Data, from the training set only (Haque et al. 2020, ``bn/train/haque2020.qa.jsonl``; never an
evaluation file):

- *not yes/no*: every Haque question (all factoid, many with ``কি`` as *what*; half of those
  respelt ``কী``, the standard spelling of *what*, which Haque almost never writes); and, made by
  rule, *what* questions of the yes/no shape: a final ``কি`` after a copula (``... নাম হল
  কি?``), ``কেন`` asked as ``কি কারণে``, the evidence sentence with its answer replaced by ``কি``
  where the answer is the object before the final verb or stands before ``নামে``/``ধরনের``...
  (``কবি কি ব্যাখ্যা করেছেন?``); a Haque question offered as a choice (``..., ১৯২০ নাকি ১৯২১?``);
- *yes/no*: :func:`kbqa.finetune.yesno.yes_no_question` on each evidence sentence (``... কি?``,
  ``X কি ...?``; a final ``কি`` only after a finite verb, ``কি`` only after a word that may end a
  subject), and one more form of the same sentence, or of its first and last words, made here
  (:data:`FORMS`): ``কি`` after the subject, a pronoun, ``কি`` and the last words (``তিনি কি ঢাকায়
  গিয়েছিলেন?``), ``নাকি?``, ``তাই না?``, ``কি না?``, ``কিনা?``, ``হ্যাঁ কি না?``, the statement
  with a ``?``; a tenth of the made particles are misspelt ``কী``.

A seeded tenth of the documents is held out; the script prints precision and recall there and
writes them to the manifest. Logistic regression, full-batch Adam on the log loss with the classes
balanced within questions with ``কি``/``কী`` and within those without (:func:`has_ki`), plus an
L2 penalty; numpy only, deterministic for a given seed. Asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import regex

from kbqa.answers.yes_no import (
    CHAR_NGRAMS,
    FEATURE_VERSION,
    FINITE_VERB_END,
    KI_ASKS_NEXT,
    MANIFEST_PATH,
    N_BUCKETS,
    WEIGHTS_PATH,
    YesNoClassifier,
    feature_vector,
)
from kbqa.errors import InputError
from kbqa.finetune.manifest import HAQUE_2020_SHA256
from kbqa.finetune.questions import load_training_questions
from kbqa.finetune.yesno import same_kind, yes_no_question
from kbqa.text import normalize_text

DEFAULT_DATA = "bn/train/haque2020.qa.jsonl"


@dataclass
class TrainConfig:
    """Settings; each is also a ``--flag`` of the same name."""

    data: str = field(
        default="",
        metadata={
            "help": f"training questions (default: {DEFAULT_DATA} in $KBQA_DATA_DIR or ../shared/data)"
        },
    )
    out: str = field(
        default=str(WEIGHTS_PATH),
        metadata={"help": "weights (.npz); the manifest goes beside it as .json"},
    )
    seed: int = field(default=0, metadata={"help": "seeds the split and the made-up questions"})
    dev_share: float = field(default=0.1, metadata={"help": "share of documents held out"})
    l2: float = field(default=1e-5, metadata={"help": "L2 penalty on the weights"})
    steps: int = field(default=400, metadata={"help": "full-batch Adam steps"})
    lr: float = field(default=0.05, metadata={"help": "Adam learning rate"})
    threshold: float = field(
        default=0.5, metadata={"help": "probability from which a question is yes/no"}
    )
    long_ki_share: float = field(
        default=0.1, metadata={"help": "share of made yes/no particles misspelt কী"}
    )
    what_long_ki_share: float = field(
        default=0.5,
        metadata={"help": "share of Haque's *what* কি respelt কী, the standard spelling"},
    )
    short_share: float = field(
        default=0.5,
        metadata={
            "help": "share of made forms asked of a shortened sentence (its first word and last 3-5 words)"
        },
    )


PRONOUNS = ("তিনি", "সে", "এটি", "তারা", "আপনি", "এটা", "ওরা", "তাঁরা", "তুমি", "এগুলো")
"""Subjects of the short made-up questions (a pronoun and the sentence's last words)."""


def _ends_in_verb(words: list[str]) -> bool:
    return bool(FINITE_VERB_END.search(normalize_text(words[-1])))


KI_WORD = regex.compile(r"(?<![\p{L}\p{M}])কি(?![\p{L}\p{M}])")
KI_OR_LONG = regex.compile(r"কি|কী")


def _ki(rng: random.Random, share: float) -> str:
    return "কী" if rng.random() < share else "কি"


NOT_A_SUBJECT_END = regex.compile(
    normalize_text(r"(র|এই|ওই|সেই|এ|ঐ|এক|একটি|একজন|কোনো|প্রতি|সব|\d+)$")
)
"""A word after which ``কি`` cannot follow a subject: a genitive (``বাংলাদেশের``), a determiner
or a number, which modify the next word (``নতুন কি আবিষ্কার``-like *what* shapes otherwise)."""


CASE_MARKED = regex.compile(normalize_text(r"(তে|কে|য়|ে|থেকে|দিয়ে|চেয়ে)$"))
"""Endings of a noun in the locative, accusative or ablative (``ঢাকায়``, ``বাড়িতে``,
``তাকে``): an argument that is not the object a *what* question leaves out."""


def _fits_after(words: list[str], k: int) -> bool:
    """Whether ``কি`` may follow ``words[k - 1]`` in a yes/no question: that word may end a
    subject, the next is not a noun ``কি`` asks for (``কি নামে``, :data:`KI_ASKS_NEXT`), and
    ``কি`` does not split the last two words unless the first is case marked (``কি ঢাকায়
    গিয়েছিলেন``, not ``শুনানি কি করেন``, which asks *what*)."""
    left = len(words) - k
    return (
        0 < k < len(words)
        and not NOT_A_SUBJECT_END.search(normalize_text(words[k - 1]))
        and normalize_text(words[k]) not in KI_ASKS_NEXT
        and (left >= 3 or (left == 2 and bool(CASE_MARKED.search(normalize_text(words[k])))))
    )


def _after_subject(words: list[str], ki: str, rng: random.Random) -> str:
    """``কি`` after the first, second or third word where it fits (:func:`_fits_after`), else
    at the end after a verb, else after the first word."""
    places = [k for k in (1, 2, 3) if _fits_after(words, k)]
    if not places and _ends_in_verb(words):
        return f"{' '.join(words)} {ki}?"
    k = rng.choice(places) if places else 1
    return f"{' '.join(words[:k])} {ki} {' '.join(words[k:])}?"


def _tail(words: list[str], rng: random.Random) -> str:
    """The last 2 to 4 words: the predicate with what it governs. Two only where the first is
    case marked (``ঢাকায় গিয়েছিলেন``): a bare noun there may be half a compound verb, its
    object cut off (``বর্ণনা করেছেন``), which asks *what* after ``কি``."""
    shortest = 2 if len(words) > 2 and CASE_MARKED.search(normalize_text(words[-2])) else 3
    return " ".join(words[-rng.randint(shortest, 4) :])


def _short(words: list[str], ki: str, rng: random.Random) -> str:
    subject = rng.choice((*PRONOUNS, words[0]))
    return f"{subject} {ki} {_tail(words, rng)}?"


def _short_final(words: list[str], ki: str, rng: random.Random) -> str:
    subject, tail = rng.choice((*PRONOUNS, words[0])), _tail(words, rng)
    return f"{subject} {tail} {ki}?" if _ends_in_verb(words) else f"{subject} {ki} {tail}?"


COPULAS = ("হল", "হলো", "হচ্ছে")


def _what_copula(question: str, rng: random.Random) -> str | None:
    """A Haque question ending in a noun and ``কি`` (``... রাজধানী কি?``) with a copula before
    ``কি`` (``... রাজধানী হল কি?``): still *what*, though a verb now stands before ``কি``."""
    words = question.rstrip(" ?").split()
    if len(words) < 3 or not KI_OR_LONG.fullmatch(words[-1]) or _ends_in_verb(words[:-1]):
        return None
    return f"{' '.join(words[:-1])} {rng.choice(COPULAS)} {words[-1]}?"


WHY = regex.compile(r"(?<![\p{L}\p{M}])কেন(?![\p{L}\p{M}])")
FOR_WHAT = ("কি কারণে", "কী কারণে", "কি জন্য", "কী জন্য")


def _what_why(question: str, rng: random.Random) -> str | None:
    """A Haque *why* question asked with ``কি কারণে``/``কী জন্য`` for ``কেন`` (``... কি কারণে
    বন্ধ হয়েছে?``): ``কি`` inside the sentence, before a noun it asks for."""
    if not WHY.search(question):
        return None
    return str(WHY.sub(rng.choice(FOR_WHAT), question, count=1))


def _what_object_gap(statement: str, answer: str, ki: str) -> str | None:
    """The sentence with its answer replaced by ``কি``, where the answer is the object right
    before the final verb (``... কাব্যের কাহিনী ব্যাখ্যা করেছেন`` -> ``... কি ব্যাখ্যা
    করেছেন?``) or stands before a noun ``কি`` asks for (``ঢাকা নামে পরিচিত`` -> ``কি নামে
    পরিচিত?``): *what* questions of the yes/no shape ``X কি ...?``. None where the answer is not
    one to three words without digits in such a place."""
    words, span = statement.split(), answer.split()
    if not 1 <= len(span) <= 3 or regex.search(r"\p{N}", answer):
        return None
    for i in range(1, len(words) - len(span)):
        after = words[i + len(span) :]
        object_gap = 1 <= len(after) <= 2 and _ends_in_verb(words)
        if words[i : i + len(span)] == span and (
            object_gap or normalize_text(after[0]) in KI_ASKS_NEXT
        ):
            return f"{' '.join([*words[:i], ki, *after])}?"
    return None


FORMS: dict[str, tuple[float, Callable[[list[str], str, random.Random], str]]] = {
    "after the subject": (0.35, _after_subject),
    "pronoun ki tail": (0.15, _short),
    "pronoun tail ki": (0.1, _short_final),
    "nAki": (0.08, lambda w, ki, rng: f"{' '.join(w)} নাকি?"),
    "tai na": (0.08, lambda w, ki, rng: f"{' '.join(w)}, তাই না?"),
    "ki na": (0.08, lambda w, ki, rng: f"{' '.join(w)} {ki} না?"),
    "kina": (0.04, lambda w, ki, rng: f"{' '.join(w)} {ki}না?"),
    "hyA ki na": (0.04, lambda w, ki, rng: f"{' '.join(w)} - হ্যাঁ {ki} না?"),
    "statement?": (0.08, lambda w, ki, rng: f"{' '.join(w)}?"),
}
"""Yes/no forms made from an evidence sentence (words), besides ``yes_no_question``'s two;
weights are sampling shares."""


def data_path(cfg: TrainConfig) -> Path:
    if cfg.data:
        return Path(cfg.data)
    root = os.environ.get("KBQA_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data")
    return Path(root) / DEFAULT_DATA


def build_examples(
    rows: list[dict[str, object]], cfg: TrainConfig
) -> dict[str, list[tuple[str, int, str]]]:
    """``split -> [(question, label, kind)]`` with ``label`` 1 for yes/no; split by document."""
    rng = random.Random(cfg.seed)
    docs = sorted({str(r["doc_id"]) for r in rows})
    random.Random(cfg.seed).shuffle(docs)
    dev_docs = set(docs[: round(len(docs) * cfg.dev_share)])
    pool = [str(r["answers"][0]).strip() for r in rows if r["answers"]]  # type: ignore[index]
    names, shares = list(FORMS), [w for w, _ in FORMS.values()]
    out: dict[str, list[tuple[str, int, str]]] = {"train": [], "dev": []}
    for r in rows:
        split = "dev" if str(r["doc_id"]) in dev_docs else "train"
        add = out[split].append
        question, answers = str(r["question"]), [str(a) for a in r["answers"]]  # type: ignore[attr-defined]
        evidence = str(r.get("evidence") or "")
        if rng.random() < cfg.what_long_ki_share:
            question = regex.sub(r"(?<![\p{L}\p{M}])কি(?![\p{L}\p{M}])", "কী", question)
        add((question, 0, "haque"))
        if copula := _what_copula(question, rng):
            add((copula, 0, "what: copula"))
        if why := _what_why(question, rng):
            add((why, 0, "what: why"))
        if not answers or not evidence:
            continue
        answer = answers[0].strip()
        swap = same_kind(answer, pool, rng)
        if swap is None:  # a pool of one answer
            continue
        if rng.random() < 0.1:
            add((f"{question.rstrip(' ?')}, {answer} নাকি {swap}?", 0, "either-or"))
        made = yes_no_question(evidence, answers, rng.random() < 0.5, swap, rng)
        if made is None:
            continue
        asked, statement = made
        if gap := _what_object_gap(statement, answer, _ki(rng, cfg.what_long_ki_share)):
            add((gap, 0, "what: object gap"))
        words = asked.rstrip("?").split()
        final = words[-1] == "কি"
        rest = words[:-1] if final else [words[0], *words[2:]]
        if (final and not _ends_in_verb(rest)) or (not final and not _fits_after(rest, 1)):
            asked = _after_subject(rest, "কি", rng)  # not after a noun at the end or a modifier
        add((KI_WORD.sub(_ki(rng, cfg.long_ki_share), asked), 1, "yes_no_question"))
        words = statement.split()
        if len(words) > 6 and rng.random() < cfg.short_share:
            words = [words[0], *words[-rng.randint(3, 5) :]]
        name = rng.choices(names, shares)[0]
        add((FORMS[name][1](words, _ki(rng, cfg.long_ki_share), rng), 1, name))
    return out


def has_ki(question: str) -> bool:
    """Whether ``question`` has ``কি``/``কী`` as a word: nearly all made-up yes/no questions do
    and most Haque questions ask with another word, so without balancing the classes within
    these two groups ``কি`` alone would read as yes/no; among ``কি`` questions the rest of the
    sentence has to decide."""
    return bool(regex.search(r"(?<![\p{L}\p{M}])(কি|কী)(?![\p{L}\p{M}])", question))


def featurize(
    questions: list[str],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """CSR ``(indptr, indices, values)`` of :func:`feature_vector` for each question."""
    vecs = [feature_vector(q) for q in questions]
    indptr = np.zeros(len(vecs) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(c) for c, _ in vecs])
    return (
        indptr,
        np.concatenate([c for c, _ in vecs]),
        np.concatenate([v for _, v in vecs]).astype(np.float64),
    )


def train(
    x: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]],
    y: npt.NDArray[np.float64],
    groups: npt.NDArray[np.int64],
    cfg: TrainConfig,
) -> tuple[npt.NDArray[np.float64], float]:
    """Weights and bias minimising the weighted mean log loss plus ``l2/2 * |w|^2``; the
    weights balance the two classes within each of ``groups`` (see :func:`has_ki`)."""
    indptr, indices, values = x
    lengths = np.diff(indptr)
    sample_w = np.zeros_like(y)
    for g in np.unique(groups):  # in each group, yes/no and not yes/no weigh half
        for label in (0, 1):
            rows = (groups == g) & (y == label)
            sample_w[rows] = 0.5 / max(rows.sum(), 1)
    sample_w /= sample_w.sum()
    theta = np.zeros(N_BUCKETS + 1)  # weights, then the bias
    m, v = np.zeros_like(theta), np.zeros_like(theta)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in range(1, cfg.steps + 1):
        score = np.add.reduceat(theta[:-1][indices] * values, indptr[:-1]) + theta[-1]
        g = (1 / (1 + np.exp(-score)) - y) * sample_w
        grad = np.empty_like(theta)
        grad[:-1] = np.bincount(
            indices, weights=np.repeat(g, lengths) * values, minlength=N_BUCKETS
        )
        grad[:-1] += cfg.l2 * theta[:-1]
        grad[-1] = g.sum()
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad**2
        theta -= cfg.lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return theta[:-1], float(theta[-1])


def figures(model: YesNoClassifier, examples: list[tuple[str, int, str]]) -> dict[str, float]:
    said = [model.is_yes_no(q) for q, _, _ in examples]
    gold = [bool(label) for _, label, _ in examples]
    tp = sum(s and g for s, g in zip(said, gold, strict=True))
    precision = tp / max(sum(said), 1)
    recall = tp / max(sum(gold), 1)
    accuracy = sum(s == g for s, g in zip(said, gold, strict=True)) / len(gold)
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "accuracy": round(accuracy, 4),
        "n": len(gold),
        "yes_no": sum(gold),
    }


def parse_args(argv: list[str] | None = None) -> TrainConfig:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in dataclasses.fields(TrainConfig):
        parser.add_argument(
            f"--{f.name.replace('_', '-')}",
            type=type(f.default),
            default=f.default,
            help=f.metadata["help"],
        )
    return TrainConfig(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> None:
    cfg = parse_args(argv)
    path = data_path(cfg)
    if not path.is_file():
        sys.exit(f"training data not found: {path} (set --data or KBQA_DATA_DIR)")
    if Path(cfg.out).suffix != ".npz":
        sys.exit(f"--out must name a .npz file (the manifest goes beside it), got {cfg.out}")
    try:  # the project's reader names the file and line of a bad row
        load_training_questions(path)
    except InputError as e:
        sys.exit(f"error: {e}")
    rows = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    if missing := next((r for r in rows if "doc_id" not in r), None):
        sys.exit(
            f"error: {path}: question {missing.get('qid')!r} has no doc_id (the split is by document)"
        )
    examples = build_examples(rows, cfg)
    if not examples["train"] or not examples["dev"]:
        sys.exit(
            f"error: {path} gives {len(examples['train'])} training and {len(examples['dev'])} "
            "held-out examples; both need at least one (more questions, on more documents)"
        )
    train_set = examples["train"]
    x = featurize([q for q, _, _ in train_set])
    y = np.array([label for _, label, _ in train_set], dtype=np.float64)
    groups = np.array([has_ki(q) for q, _, _ in train_set], dtype=np.int64)
    weights, bias = train(x, y, groups, cfg)
    model = YesNoClassifier(weights.astype(np.float16).astype(np.float32), bias, cfg.threshold)
    dev = figures(model, examples["dev"])
    by_kind: dict[str, dict[str, float]] = {}
    for kind in sorted({k for _, _, k in examples["dev"]}):
        rows_k = [e for e in examples["dev"] if e[2] == kind]
        by_kind[kind] = {
            "n": len(rows_k),
            "typed_right": round(
                sum(model.is_yes_no(q) == bool(lab) for q, lab, _ in rows_k) / len(rows_k), 4
            ),
        }
    out = Path(cfg.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out,
        weights=model.weights.astype(np.float16),
        bias=np.float64(bias),
        threshold=np.float64(cfg.threshold),
        feature_version=np.int64(FEATURE_VERSION),
    )
    settings = dataclasses.asdict(cfg)
    settings.pop("out")
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    settings["data"] = {  # known by its content: no data path in the package
        "name": "Haque 2020 training questions" if sha == HAQUE_2020_SHA256 else path.name,
        "sha256": sha,
    }
    manifest = {
        "model": "logistic regression over hashed features (kbqa.answers.yes_no.yes_no_features)",
        "reproduce": "python benchmarks/train_yes_no.py [--data HAQUE_2020_QUESTIONS]",
        "training_data": "Haque et al. 2020 training questions (not yes/no), yes/no questions and yes/no-shaped what questions made by rule from them and their evidence sentences; no evaluation file",
        "feature_version": FEATURE_VERSION,
        "n_buckets": N_BUCKETS,
        "char_ngrams": list(CHAR_NGRAMS),
        "settings": settings,
        "train_examples": {"n": len(train_set), "yes_no": int(y.sum())},
        "held_out_documents": {"all": dev, "by_kind": by_kind},
    }
    manifest_path = out.with_suffix(".json") if out != WEIGHTS_PATH else MANIFEST_PATH
    manifest_path.write_text(
        json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    print(f"wrote {out} ({out.stat().st_size:,} bytes) and {manifest_path}")
    print(json.dumps(manifest["held_out_documents"], ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
