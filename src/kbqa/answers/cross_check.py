"""The cross-check's rules: the pattern extractor reads the context the reader read, and
overrules the reader where the two disagree in ways measured to favour the extractor.

The reader (the tuned Gemma 3 270M) decides *whether* the context holds an answer: its
abstentions are calibrated on held-out data (``docs/finetune.md``). Its spans are the weak part
on Bangla Wikipedia: on BanglaRQA validation (300 questions, seed 0) the pattern extractor
(:func:`~kbqa.answers.extract.extract_answer`, the type-aware RAG seed's no-LLM reader) scores
answerable F1 0.43 on the same retrieval against the reader's 0.30, and wins on every question
type. The extractor picks the sentence that shares most content words with the question; the
share it holds (:attr:`~kbqa.answers.extract.Extraction.coverage`) is a second opinion on whether
the context answers at all. Four rules, in this order:

1. an answer whose context holds no sentence with at least :data:`ABSTAIN_BELOW` of the
   question's content words becomes an abstention (``cross_check: abstained``);
2. an answer that is not in the extractor's sentence and shares no word with its span is
   replaced by that span (``cross_check: extractor``). An answer that agrees with it is also
   replaced where the extractor's span measured better (:func:`prefer_extractor`: a yes/no
   question answered with neither yes nor no; a list or untyped question whose extractor span
   is not inside the answer: ``cross_check: agrees, extractor's span``); otherwise it stays
   (``cross_check: agrees``);
3. a settled abstention (after the retries) whose context holds a sentence with at least
   :data:`ANSWER_FROM` of the question's content words is answered with the extractor's span
   (``cross_check: answered``);
4. a date question (``কত সালে``, ``কবে``, *when*) answered with no digit is answered with the
   extractor's span when that span holds one (:func:`undated`; ``cross_check: date``): asked
   the year Nazrul was born, the reader wrote the phrase beside the year (``এক দরিদ্র মুসলিম
   পরিবারে``). The type-aware RAG seed's idea that an answer has its question's type.

On English the reader reads better than the extractor (XQuAD: rule 2 lowered F1), so
``Context.cross_check = "auto"`` (the default) lets the node change Bangla answers only, and only
with the rules ``Context.cross_check_rules`` names (:func:`parse_rules`; default none since
2026-12-05: with the 2-epoch reader no rule raised both BanglaRQA samples without lowering the
natural-questions set; since 2026-12-07 ``date``, which changed no answer of three BanglaRQA
samples of 300 and raised the natural set). Figures: ``docs/finetune.md`` ("Cross-check").
"""

from __future__ import annotations

from kbqa.answers.extract import Extraction
from kbqa.answers.vocabulary import EDGE, YES_NO_FORMS
from kbqa.context_checks import CROSS_CHECK_RULES as RULES
from kbqa.context_checks import parse_rules as parse_rules
from kbqa.retrieval.tokenizer import tokenize
from kbqa.text import normalize_text

AUTO_LANGUAGES = frozenset({"bn"})
"""Languages whose answers ``cross_check="auto"`` may change (measured to help there)."""
ABSTAIN_BELOW = 0.5
"""An answer becomes an abstention when the best sentence of its context holds less than this
share of the question's content words (rule 1)."""
ANSWER_FROM = 0.7
"""A settled abstention is answered by the extractor when the best sentence of its context holds
at least this share of the question's content words (rule 3). Both thresholds were chosen on
BanglaRQA validation 300 (seed 0) as the pair
with the best overall F1 that keeps at least 60% of unanswerable questions abstained
(``benchmarks/cross_check.py --grid``): answerable F1 0.499 -> 0.531, unanswerable abstention
59.2% -> 60.5%; on seed 1, not tuned on, 0.461 -> 0.488 and 45.1% -> 53.5%."""


def agrees(answer: str, found: Extraction) -> bool:
    """The reader's ``answer`` agrees with the extractor's: the two spans share a word, or
    every word of ``answer`` is in the extractor's sentence (kbqa's tokenizer: lower-cased,
    Bangla and ASCII digits folded, so ``১৯৭১`` meets ``1971``)."""
    words = set(tokenize(answer))
    if words & set(tokenize(found.answer)):
        return True
    return bool(words) and words <= set(tokenize(found.sentence))


YES_NO_WORDS = YES_NO_FORMS
"""Answers that answer a yes/no question (compared after :func:`_bare`)."""
_EDGE = EDGE


def _bare(text: str) -> str:
    """``text`` normalised (NFC, no format characters), lower-cased, without edge punctuation."""
    return normalize_text(text).strip(_EDGE).lower()


WIDER_SPAN_TYPES = frozenset({"list", "other"})
"""Question types (:func:`kbqa.answers.language.question_type`) whose agreeing answers take the
extractor's span unless that span lies inside the answer. The reader stops early on them
(``গোলাকার`` for ``পৃথিবী গোলাকার নয়, বরং সমতল, এই ধারণাকে``; the first item of a list); typed
questions (person, location, number, date) keep the reader's answer, which measured better
there. Chosen on BanglaRQA validation 300 (seed 0), answerable F1 0.534 -> 0.569; seed 1, not
tuned on, 0.489 -> 0.518 (``docs/finetune.md``, "Cross-check")."""


def prefer_extractor(answer: str, found: Extraction, question_type: str) -> bool:
    """Whether the extractor's span replaces a reader ``answer`` that :func:`agrees` with it.

    True for a ``yes/no`` question whose answer is not a yes/no word (:data:`YES_NO_WORDS`),
    and for a question of :data:`WIDER_SPAN_TYPES` unless every word of the extractor's span is
    already in ``answer``."""
    if question_type == "yes/no":
        return _bare(answer) not in YES_NO_WORDS
    if question_type in WIDER_SPAN_TYPES:
        return not set(found.answer.split()) <= set(answer.split())
    return False


def applies(mode: str, language: str) -> bool:
    """Whether the cross-check may change an answer in ``language`` under ``mode``
    (``auto``: the languages of :data:`AUTO_LANGUAGES`; ``on``: all; ``off``: none)."""
    return mode == "on" or (mode == "auto" and language in AUTO_LANGUAGES)


def _has_digit(text: str) -> bool:
    return any(ch.isdigit() for ch in text)  # Unicode digits: ১৮৯৯ as well as 1899


def undated(answer: str, found: Extraction, question_type: str) -> bool:
    """Rule 4: a ``date`` question whose ``answer`` holds no digit (Bangla or ASCII) while the
    extractor's span holds one."""
    return question_type == "date" and not _has_digit(answer) and _has_digit(found.answer)


def decide(
    answer: str,
    abstained: bool,
    found: Extraction | None,
    abstention_phrase: str,
    question_type: str = "other",
    *,
    abstain_below: float = ABSTAIN_BELOW,
    answer_from: float = ANSWER_FROM,
    rules: tuple[str, ...] = RULES,
) -> tuple[str, bool, str]:
    """The module's four rules, on the reader's ``answer`` (or its abstention) and the
    extractor's ``found`` on the same context, for a question of ``question_type``.

    ``rules`` names the rules applied (of :data:`RULES`; a rule left out keeps the answer it
    would have changed).

    Returns:
        ``(answer, abstained, status)``: the answer to keep (``abstention_phrase`` for an
        abstention) and the route status (see :func:`cross_check`).
    """
    coverage = found.coverage if found else 0.0
    if found is not None and not _bare(found.answer):
        found = None  # a span of blanks or punctuation is no span (its sentence still counts)
    if abstained:
        if found and coverage >= answer_from and "answer" in rules:
            return found.answer, False, "cross_check: answered"
        return answer, True, "cross_check: kept abstention"
    if coverage < abstain_below and "abstain" in rules:
        return abstention_phrase, True, "cross_check: abstained"
    if found is None:
        return answer, False, "cross_check: no span"
    if "date" in rules and undated(answer, found, question_type):
        return found.answer, False, "cross_check: date"
    if agrees(answer, found):
        if "wider-span" in rules and prefer_extractor(answer, found, question_type):
            return found.answer, False, "cross_check: agrees, extractor's span"
        return answer, False, "cross_check: agrees"
    if "extractor" not in rules:
        return answer, False, "cross_check: disagrees, kept"
    return found.answer, False, "cross_check: extractor"
