"""The reader's example set: every training question's examples (:func:`build_examples`, each
rendered by :class:`~kbqa.finetune.data.ExampleBuilder`), and the kinds made by rule
(:mod:`kbqa.finetune.kinds`) added to them (:func:`add_rule_kinds`): causal and list questions
from a document's sentences, and lexical traps from a training question.

Each rule kind is rendered as served (:meth:`kbqa.finetune.data.ExampleBuilder.render`) and
tagged in its id: ``DOC#why-N`` and ``DOC#list-N`` are ``span`` examples (their answer is a span
of the context), ``QID#trap`` an ``abstain`` example (the passage matches the question's words
but does not answer it).
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace

from kbqa.answers.language import question_type
from kbqa.answers.normalize import answer_in_context, normalize_answer
from kbqa.corpus.chunking import Chunk
from kbqa.evals.datasets import Question
from kbqa.finetune.data import ExampleBuilder, abstention_example, clean_target, shown_context
from kbqa.finetune.examples import DataStats, ReaderExample
from kbqa.finetune.kinds import (
    MADE_KINDS,
    causal_pairs,
    causal_question,
    list_question,
    sentences,
)
from kbqa.finetune.paraphrase import RULES as PARAPHRASE_RULES
from kbqa.finetune.paraphrase import paraphrase
from kbqa.finetune.questions import TrainingQuestion
from kbqa.finetune.synonyms import synonym_table, word_counts
from kbqa.finetune.traps import (
    DEFAULT_TRAP_RULES,
    SUFFIXES,
    entity_trap,
    name_lexicon,
    number_trap,
    relation_trap,
)
from kbqa.finetune.yesno import same_kind

log = logging.getLogger(__name__)


def build_examples(
    questions: Sequence[TrainingQuestion],
    builder: ExampleBuilder,
    *,
    splits: dict[str, str],
    negative_ratio: float,
    yes_no_ratio: float,
    seed: int,
    redacted_share: float = 0.5,
    short_builder: ExampleBuilder | None = None,
    served_share: float = 1.0,
    paraphrase_share: float = 0.0,
    paraphrase_rules: tuple[str, ...] = tuple(PARAPHRASE_RULES),
    progress: bool = True,
) -> tuple[list[ReaderExample], DataStats]:
    """Build every example: one ``span`` per usable question, plus an ``abstain`` for a seeded
    ``negative_ratio`` share of them (of which ``redacted_share`` have the answer sentences cut
    from their own context, :meth:`ExampleBuilder.redacted`, and the rest are other chunks,
    :meth:`ExampleBuilder.negative`) and a ``yes`` or ``no`` (alternating) for a
    ``yes_no_ratio`` share.

    Training questions are rendered by ``builder`` (as served) for a ``served_share`` of them
    and by ``short_builder`` (shorter windows, cheaper to train on) for the rest; a
    ``paraphrase_share`` of them are asked in another form by the ``paraphrase_rules``
    (:func:`kbqa.finetune.paraphrase.paraphrase`; the ``synonym`` rule's table is made from the
    words of ``builder``'s knowledge base, :func:`kbqa.finetune.synonyms.synonym_table`).
    Validation questions are always rendered as served, as written.

    Raises:
        ValueError: A ratio outside [0, 1].
        KBQAError: The ``synonym`` rule is named and the ``shobdo`` dictionary is missing.
    """
    from tqdm import tqdm

    _check_ratios(
        negative_ratio=negative_ratio,
        yes_no_ratio=yes_no_ratio,
        redacted_share=redacted_share,
        served_share=served_share,
        paraphrase_share=paraphrase_share,
    )
    rng = random.Random(seed)
    pool = [clean_target(a) for tq in questions for a in tq.question.answers[:1] if a.strip()]
    stats = DataStats(questions=len(questions))
    out: list[ReaderExample] = []
    truth = True
    form_rng = random.Random(f"{seed}:form")  # its own stream: the others draw as before
    synonyms = None
    if "synonym" in paraphrase_rules and paraphrase_share > 0:
        names = name_lexicon(
            (question_type(tq.question.question), a)
            for tq in questions
            for a in tq.question.answers[:1]
        )
        synonyms = synonym_table(
            word_counts(c.text for c in builder.chunks),
            names=(w for ws in names.values() for w in ws),
        )
        if not synonyms:
            log.warning(
                "the synonym paraphrase rule has no synonym for this knowledge base (it needs "
                "Bangla words that occur often in it): no question will be asked with one"
            )
    for tq in tqdm(questions, desc="examples", unit="q", disable=not progress):
        q = tq.question
        split = splits.get(q.doc_id or q.qid, "train")
        if not q.answerable and q.doc_id:  # annotated unanswerable (SQuAD 2.0): read its passage
            out += _counted(stats, builder.unanswerable(q, split))
            continue
        if not q.answerable or not q.answers:
            stats.unusable += 1
            continue
        b = builder
        if split == "train":
            if short_builder is not None and form_rng.random() >= served_share:
                b = short_builder
            q = _maybe_paraphrased(q, paraphrase_share, form_rng, stats, paraphrase_rules, synonyms)
        example = b.positive(q, split)
        if example is None:
            stats.unusable += 1
            continue
        stats.usable += 1
        made = [example]
        if rng.random() < negative_ratio:
            neg = (b.redacted if rng.random() < redacted_share else b.negative)(q, split)
            if neg is None:
                stats.no_negative_context += 1
            else:
                made.append(neg)
        if tq.evidence and rng.random() < yes_no_ratio:
            swap = same_kind(clean_target(q.answers[0]), pool, rng)
            yn = None if swap is None else b.yes_no(tq, split, truth, swap)
            if yn is not None:
                made.append(yn)
                truth = not truth
        out += _counted(stats, *made)
    return out, stats


def _counted(stats: DataStats, *examples: ReaderExample | None) -> list[ReaderExample]:
    """The examples that were made (not None), each counted in ``stats``."""
    made = [ex for ex in examples if ex is not None]
    for ex in made:
        stats.count(ex)
    return made


def _check_ratios(**ratios: float) -> None:
    """Raises ValueError naming the first ratio outside [0, 1]."""
    for name, ratio in ratios.items():
        if not 0 <= ratio <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {ratio!r}")


def _maybe_paraphrased(
    q: Question,
    share: float,
    rng: random.Random,
    stats: DataStats,
    rules: tuple[str, ...] = tuple(PARAPHRASE_RULES),
    synonyms: Mapping[str, list[str]] | None = None,
) -> Question:
    """``q`` asked in another form (:func:`kbqa.finetune.paraphrase.paraphrase`, by ``rules``,
    with the ``synonym`` rule's table) for a seeded ``share`` of questions, when a rule applies
    (counted in ``stats.paraphrased``)."""
    if rng.random() < share:
        asked, applied = paraphrase(q.question, rng, rules, synonyms)
        if applied:
            stats.paraphrased += 1
            return replace(q, question=asked)
    return q


def chunk_counter(chunks: Sequence[Chunk]) -> Callable[[str], int]:
    """``word -> how many of chunks hold it`` (normalised; with a Bangla case ending too)."""
    counts: Counter[str] = Counter()
    for chunk in chunks:
        counts.update(set(normalize_answer(chunk.text).split()))

    def count(word: str) -> int:
        w = normalize_answer(word)
        return counts[w] + sum(counts[w + s] for s in SUFFIXES)

    return count


class KindMaker:
    """Makes the rule kinds' examples with an :class:`ExampleBuilder`'s retrieval and prompt.

    Args:
        builder: Renders prompts as served, over the training knowledge base's index.
        names: Names by type for entity traps (:func:`~kbqa.finetune.traps.name_lexicon`).
        trap_rules: The trap rules tried, in order (:data:`~kbqa.finetune.traps.TRAP_RULES`).
    """

    def __init__(
        self,
        builder: ExampleBuilder,
        names: Mapping[str, Sequence[str]],
        trap_rules: Sequence[str] = tuple(DEFAULT_TRAP_RULES.split(",")),
    ) -> None:
        self.builder = builder
        self.names = names
        self.trap_rules = tuple(trap_rules)

    def document_examples(
        self, doc_id: str, split: str, kinds: set[str], rng: random.Random
    ) -> Iterator[ReaderExample]:
        """The ``why`` and ``list`` examples of one document's chunks (those of ``kinds``)."""
        text = "\n".join(self.builder.chunks[c].text for c in self.builder.doc_chunks(doc_id))
        made: list[tuple[str, tuple[str, str] | None]] = []
        if "why" in kinds:
            made += [("why", causal_question(e, c, rng)) for e, c in causal_pairs(text)]
        if "list" in kinds:
            made += [("list", list_question(s)) for s in sentences(text)]
        for n, (kind, qa) in enumerate(made):
            if qa is None:
                continue
            example = self.span(f"{doc_id}#{kind}-{n}", doc_id, split, *qa)
            if example is not None:
                yield example

    def span(
        self, qid: str, doc_id: str, split: str, asked: str, answer: str
    ) -> ReaderExample | None:
        """A ``span`` example of a made question whose answer is ``answer``, or None when the
        answer cannot be shown."""
        showing = self.builder.showing(asked, answer, doc_id)
        if showing is None:
            return None
        records, (prompt, kept, qtype, lang) = showing
        rank = self.builder.answer_rank(records, kept, [answer])
        return ReaderExample(
            qid, "span", split, doc_id, asked, prompt, answer, [answer], qtype, lang, kept, rank
        )

    def trap(self, q: Question, split: str, rng: random.Random) -> ReaderExample | None:
        """A ``QID#trap`` abstention example: ``q`` with its relation, a name or a number
        swapped (the first of ``trap_rules`` that applies: :func:`~kbqa.finetune.traps.
        relation_trap`, :func:`~kbqa.finetune.traps.entity_trap`, :func:`~kbqa.finetune.traps.
        number_trap`), read against ``q``'s own context (which holds ``q``'s answer: the lure);
        None when no swap applies."""
        showing = self.builder.showing(q.question, q.answers[0], q.doc_id)
        if showing is None:
            return None
        records, (prompt, _, _, _) = showing
        shown = shown_context(prompt)
        asked = None
        for rule in self.trap_rules:
            if rule == "relation":
                asked = relation_trap(q.question, shown)
            elif rule == "entity":
                asked = entity_trap(q.question, q.answers, shown, self.names, rng)
            elif rule == "number":
                asked = number_trap(q.question, q.answers, shown, rng)
            if asked is not None:
                break
        if asked is None:
            return None
        prompt, kept, qtype, lang = self.builder.render(asked, records)
        if not answer_in_context(q.answers, shown_context(prompt)):  # the lure was cut
            return None
        trap = Question(q.qid, asked, [], q.doc_id, answerable=False)
        return abstention_example(trap, "trap", split, prompt, kept, qtype, lang)


def add_rule_kinds(
    examples: list[ReaderExample],
    stats: DataStats,
    questions: Sequence[TrainingQuestion],
    builders: tuple[ExampleBuilder, ExampleBuilder | None],
    *,
    splits: dict[str, str],
    kinds: Sequence[str],
    trap_ratio: float,
    served_share: float,
    seed: int,
    trap_rules: Sequence[str] = tuple(DEFAULT_TRAP_RULES.split(",")),
) -> list[ReaderExample]:
    """``examples`` with the rule kinds added: every ``why``/``list`` question the documents'
    sentences give (of ``kinds``), and a trap for a seeded ``trap_ratio`` share of the
    answerable questions. Training examples are rendered by the short-window builder (the
    second of ``builders``) for ``1 - served_share`` of them, as :func:`build_examples` does;
    every draw is from its own stream, so the other examples are the same with or without these.

    Raises:
        ValueError: A kind not in :data:`~kbqa.finetune.kinds.MADE_KINDS`, or ``trap_ratio`` outside
            [0, 1].
    """
    unknown = set(kinds) - set(MADE_KINDS)
    if unknown:
        raise ValueError(f"unknown rule kind(s) {sorted(unknown)}: choose from why, list")
    _check_ratios(trap_ratio=trap_ratio)
    rng = random.Random(f"{seed}:kinds")
    served, short = builders
    names = name_lexicon(
        (
            (question_type(tq.question.question), a)
            for tq in questions
            for a in tq.question.answers[:1]
            if trap_ratio and splits.get(tq.question.doc_id or tq.question.qid) == "train"
        ),
        chunk_counter(served.chunks) if trap_ratio else None,
    )
    makers = {id(b): KindMaker(b, names, trap_rules) for b in (served, short) if b is not None}

    def maker(split: str) -> KindMaker:
        use_short = split == "train" and short is not None and rng.random() >= served_share
        return makers[id(short if use_short else served)]

    made: list[ReaderExample] = []
    if kinds:
        docs = sorted({tq.question.doc_id for tq in questions if tq.question.doc_id})
        for doc in docs:
            split = splits.get(doc, "train")
            made += maker(split).document_examples(doc, split, set(kinds), rng)
    if trap_ratio:
        for tq in questions:
            q = tq.question
            if not q.answerable or not q.answers or rng.random() >= trap_ratio:
                continue
            split = splits.get(q.doc_id or q.qid, "train")
            trap = maker(split).trap(q, split, rng)
            if trap is not None:
                made.append(trap)
    for ex in made:
        stats.count(ex)
        tag = ex.qid.rsplit("#", 1)[-1].split("-")[0]
        stats.made[tag] = stats.made.get(tag, 0) + 1
    return examples + made
