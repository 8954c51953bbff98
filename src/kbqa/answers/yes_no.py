"""Is a Bangla question a yes/no question? A logistic regression over hashed features of the
whole question, shipped with the package: ``yes_no_bn.npz`` (2^16 float16 weights, about 120 KB)
and ``yes_no_bn.json``, its manifest (how it was made, held-out figures).

``কি`` asks *what* as often as it marks a yes/no question (``কবি কি ব্যাখ্যা করেছেন?``, *what
did the poet explain*; ``তিনি কি ঢাকায় গিয়েছিলেন?``, *did he go to Dhaka*), and ``কী``, the
standard spelling of *what*, is written for both too. Word rules that looked at the word after
or before ``কি`` typed such *what* questions yes/no; the classifier weighs every word, its
neighbours and endings, and the character n-grams of the question instead.

Features (:func:`yes_no_features`): character 2- to 4-grams, words and word bigrams, and the
question's shape (its last words and their endings; for each ``কি``, whether it opens the
question, how many words follow it, the words and endings beside it, its spelling), over the text
after :func:`~kbqa.text.normalize_text` with digits folded to ``0`` and ``কী`` folded to
``কি`` (but for the spelling feature). Each feature is hashed (CRC-32) into :data:`N_BUCKETS`
buckets, each of the three groups a unit vector (:func:`feature_vector`); the score is the dot
product with the weights plus a bias, squashed by the logistic function.

Training: ``python benchmarks/train_yes_no.py``, on Haque et al. 2020's training questions (not
yes/no) and questions made by rule from their evidence sentences (yes/no, and *what* questions
of the yes/no shape); no evaluation data. Inference is numpy only and deterministic.
"""

from __future__ import annotations

import functools
import itertools
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import regex

from kbqa.answers.question_words import QUESTION_WORDS_BN
from kbqa.text import fold_digits, normalize_text

WEIGHTS_PATH = Path(__file__).with_name("yes_no_bn.npz")
"""The shipped weights: ``weights`` (float16, :data:`N_BUCKETS`; read as float32), ``bias``,
``threshold`` and ``feature_version``."""
MANIFEST_PATH = Path(__file__).with_name("yes_no_bn.json")
"""How the shipped weights were made: data, command, settings, held-out figures."""
FEATURE_VERSION = 1
"""Bumped whenever :func:`yes_no_features` changes; weights of another version are refused."""
N_BUCKETS = 1 << 16
CHAR_NGRAMS = (2, 3, 4)

_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")
_KI_LONG = regex.compile(r"(?<![\p{L}\p{M}])কী")
"""``কী`` at the start of a word (``কী``, ``কীভাবে``, ``কীসের``), folded to ``কি``."""
KI = "কি"
_QUESTION_WORDS = frozenset(_KI_LONG.sub(KI, w) for w in QUESTION_WORDS_BN)

KI_ASKS_NEXT = frozenset(
    normalize_text(w)
    for w in (
        "ধরনের",
        "ধরণের",
        "নামে",
        "নাম",
        "কারণে",
        "কারনে",
        "হিসেবে",
        "হিসাবে",
        "রকম",
        "রকমের",
        "জন্য",
        "উদ্দেশ্যে",
        "বিষয়ে",
        "কাজ",
        "ছিল",
        "ছিলো",
    )
)
KI_ASKS_NEXT_STEMS = tuple(
    normalize_text(w) for w in ("হয়", "হল", "হবে", "হচ্ছে", "কর", "বল", "বোঝ", "বুঝ")
)
"""A word after ``কি`` that makes it ask *what*: a noun it asks for (``কি নামে``, ``কী কারণে``)
or a form of হওয়া, করা, বলা, বোঝা (``কি হয়েছিল``, ``কী বোঝায়``). The earlier word rules' list,
here one feature among many (``kask:``)."""
FINITE_VERB_END = regex.compile(
    normalize_text(
        r"(েছে|েছেন|েছিল|েছিলো|েছিলেন|ছে|ছেন|ছি|ছিল|ছিলো|ছিলেন|েন|(?<!্)বে|(?<!্)বেন|তো|তেন|লো|লেন|লাম|েনি|য়নি|ননি|না|"
        r"নয়|নেই|আছে|হয়|হল|যায়|দেয়|নেয়|পায়|চায়|ঘটে|আসে|করে|পারে|থাকে|রাখে|বলে|চলে|যান|পান|খান|"
        r"চান|হন|দেন|নেন|গেল|দিল|নিল|পেল|করল)$"
    )
)
"""Endings of finite Bangla verbs (``রয়েছে``, ``পারেন``, ``হয়নি``; not ``তিনি``, ``পূর্বে``):
a final ``কি`` after one mostly asks yes or no (``... রয়েছে কি?``), after a noun *what*
(``... রাজধানী কি?``)."""


def _words(question: str) -> tuple[list[str], list[str]]:
    """The words of ``question`` as written and with ``কী`` folded to ``কি``, digits to ``0``."""
    text = regex.sub(r"\d+", "0", fold_digits(normalize_text(question)).lower())
    written = _WORD.findall(text)
    return written, [_KI_LONG.sub(KI, w) for w in written]


def _is_verb(word: str) -> bool:
    return bool(FINITE_VERB_END.search(word))


def _is_question_word(word: str) -> bool:
    """A Bangla question word other than ``কি`` (``কে``, ``কোথায়``, ``কিভাবে``, ``কতজন``)."""
    return word != KI and (word in _QUESTION_WORDS or word.startswith(("কত", "কোন", "কয়")))


def _bucket(n: int, top: int) -> str:
    return str(min(n, top))


def yes_no_features(question: str) -> dict[str, list[str]]:
    """The features of ``question`` by group, as strings (a feature may repeat; it counts once).

    Args:
        question: A question as typed; punctuation is ignored, and ``কী`` is folded to ``কি``
            everywhere but in one feature (``sp:``) that records how each was spelt.

    Returns:
        ``{"chars": ..., "words": ..., "structure": ...}``: character n-grams of the words
        joined by spaces; words and word bigrams (``<s>``/``</s>`` at the edges); and the
        question's shape: how many other question words it has (``wh#:``), the last two words,
        their endings and whether the last is a finite verb (``l...:``), and for each ``কি``
        whether it opens the question, how many words follow it, the words and word endings
        beside it, whether the word before is a finite verb, whether the word after asks *what*
        (:data:`KI_ASKS_NEXT`) and how it was spelt (``k...:``, ``sp:``). All empty for a
        question with no word.
    """
    written, words = _words(question)
    if not words:
        return {"chars": [], "words": [], "structure": []}
    n = len(words)
    padded = ["<s>", *words, "</s>"]
    text = f" {' '.join(words)} "
    chars = [text[i : i + k] for k in CHAR_NGRAMS for i in range(len(text) - k + 1)]
    bigrams = [f"{a} {b}" for a, b in itertools.pairwise(padded)]
    last = words[-1]
    shape = [f"l:{last}", f"l2:{last[-2:]}", f"l3:{last[-3:]}"]
    if n > 1:
        shape += [f"lp:{words[-2]}", f"lp2:{words[-2][-2:]}"]
    places = [i for i, w in enumerate(words) if w == KI]
    asking = sum(_is_question_word(w) for w in words)
    shape += [f"k#:{_bucket(len(places), 3)}", f"wh#:{_bucket(asking, 2)}"]
    content = [w for w in words if w != KI]
    if content:
        shape.append(f"lv:{_is_verb(content[-1])}")
    for i in places:
        after = n - 1 - i
        shape += [f"sp:{written[i]}", f"k0:{i == 0}", f"ka:{_bucket(after, 6)}"]
        if i > 0:
            prev = words[i - 1]
            shape += [f"kp:{prev}", f"kp2:{prev[-2:]}", f"kp1:{prev[-1:]}"]
            shape.append(f"kpv:{_is_verb(prev)}:{after == 0}")
        if after > 0:
            nxt = words[i + 1]
            shape += [f"kn:{nxt}", f"kn2:{nxt[-2:]}", f"kn3:{nxt[-3:]}", f"knl:{after == 1}"]
            asks = nxt in KI_ASKS_NEXT or nxt.startswith(KI_ASKS_NEXT_STEMS)
            shape.append(f"kask:{asks}")
        if after > 1:
            shape += [f"knn:{words[i + 2]}", f"knn2:{words[i + 2][-2:]}"]
    return {"chars": chars, "words": words + bigrams, "structure": shape}


def feature_vector(
    question: str, n_buckets: int = N_BUCKETS
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """``(columns, values)``: the question's hashed features, a sparse vector.

    Each feature name, prefixed by its group, is hashed (CRC-32 of its UTF-8 bytes, modulo
    ``n_buckets``); each group's distinct buckets take the value ``1/sqrt(count)``, so each
    group has unit length: a long question does not score higher for having more features, and
    the few shape features weigh as much as the hundreds of character n-grams. A bucket two
    groups share appears twice (the sum is the same). Both arrays are empty for a question with
    no word.
    """
    cols: list[npt.NDArray[np.int64]] = []
    vals: list[npt.NDArray[np.float32]] = []
    for group, feats in yes_no_features(question).items():
        if not feats:
            continue
        hashed = np.unique(
            np.fromiter((zlib.crc32(f"{group}|{f}".encode()) % n_buckets for f in feats), np.int64)
        )
        cols.append(hashed)
        vals.append(np.full(len(hashed), 1 / np.sqrt(len(hashed)), dtype=np.float32))
    if not cols:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    return np.concatenate(cols), np.concatenate(vals)


@dataclass(frozen=True)
class YesNoClassifier:
    """A logistic regression over :func:`feature_vector`.

    Attributes:
        weights: One weight per bucket, shape ``(N_BUCKETS,)``.
        bias: The intercept.
        threshold: A question is yes/no when its probability is at least this.
    """

    weights: npt.NDArray[np.float32]
    bias: float
    threshold: float = 0.5

    @classmethod
    def load(cls, path: Path = WEIGHTS_PATH) -> YesNoClassifier:
        """Read weights saved by ``benchmarks/train_yes_no.py``.

        Raises:
            FileNotFoundError: ``path`` does not exist.
            ValueError: the file was made for another feature version or bucket count, or its
                weights are not finite.
        """
        with np.load(path) as data:
            version = int(data["feature_version"])
            weights = np.asarray(data["weights"], dtype=np.float32)
            bias, threshold = float(data["bias"]), float(data["threshold"])
        if version != FEATURE_VERSION:
            raise ValueError(
                f"{path}: feature_version {version}, this code reads {FEATURE_VERSION}; "
                "retrain with python benchmarks/train_yes_no.py"
            )
        if weights.shape != (N_BUCKETS,) or not np.isfinite(weights).all():
            raise ValueError(
                f"{path}: weights of shape {weights.shape}, want ({N_BUCKETS},) finite"
            )
        return cls(weights, bias, threshold)

    def probability(self, question: str) -> float:
        """P(yes/no) for ``question``, in [0, 1]; 0.0 for a question with no word."""
        cols, vals = feature_vector(question)
        if not len(cols):
            return 0.0
        score = float(self.weights[cols] @ vals) + self.bias
        return float(1.0 / (1.0 + np.exp(-score)))

    def is_yes_no(self, question: str) -> bool:
        """True when :meth:`probability` reaches :attr:`threshold`."""
        return self.probability(question) >= self.threshold


@functools.cache
def yes_no_classifier() -> YesNoClassifier:
    """The shipped classifier, read once per process."""
    return YesNoClassifier.load()


def manifest() -> dict[str, object]:
    """The shipped weights' manifest (``yes_no_bn.json``)."""
    data: dict[str, object] = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    return data
