"""Reader training examples, rendered exactly as the generate node renders its prompts.

For each training question the builder retrieves from an index of the training knowledge base
with the serving retriever (:func:`kbqa.passages.retrieve_records`: hybrid fusion, previous
chunk padding, ``k`` hits), turns the hits into passages (:func:`kbqa.nodes.common.
chunk_passages`) and fits them into the serving token budget (:func:`kbqa.prompts.budget.
fit_prompt` with :func:`~kbqa.prompts.budget.prompt_budget`) in the ``tuned`` prompt style. So
the gold chunk is wherever retrieval put it, with the distractors retrieval found.

Kinds of example (``ReaderExample.kind``):

- ``span``: the gold answer is in the fitted context; the target is the answer. When retrieval
  missed it, the gold chunk replaces the lowest-ranked hit at a random rank.
- ``abstain``: a negative, the target being the abstention phrase. Either the question with
  retrieved chunks that do not hold any gold answer (those that do are dropped, the next hits
  move up), or its own context with the sentences holding the answer cut out (on topic, but no
  longer answering: how BanglaRQA's unanswerable questions look).
- ``abstain`` from the data: a question annotated unanswerable against its document (SQuAD 2.0
  has them; Haque 2020 none) read over its own retrieval, the document put in when missed.
- ``yes`` / ``no``: yes/no questions made by rule from the annotators' ``evidence`` sentence
  (Haque 2020 has none; BanglaRQA asks 128 among 1,126 answerable): the sentence asked as a
  question (``... কি?``, or ``কি`` after its first word) is ``হ্যাঁ``; the same sentence with its
  answer span swapped for another question's answer of the same kind is ``না``.

Questions are split 80/20 by document (:func:`~kbqa.finetune.questions.split_by_document`):
no validation question is trained on. The retrieval index holds the whole training knowledge
base, so a validation document can appear as a distractor in a training prompt, as any page
of a knowledge base can.

The training questions and their split are in :mod:`kbqa.finetune.questions`; the example
record and its JSON Lines file in :mod:`kbqa.finetune.examples`; the yes/no rules in
:mod:`kbqa.finetune.yesno`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Sequence

from kbqa.answers.language import detect_language, question_type
from kbqa.answers.normalize import answer_in_context
from kbqa.answers.vocabulary import NO, YES
from kbqa.context import Context
from kbqa.evals.datasets import Question
from kbqa.finetune.examples import PROMPT_STYLE, ReaderExample
from kbqa.finetune.questions import TrainingQuestion
from kbqa.finetune.yesno import SENTENCE_END, TRAILING, yes_no_question
from kbqa.passages import chunk_passages, retrieve_records
from kbqa.prompts import ABSTENTION_PHRASE, CONTEXT_MARKER, Passage
from kbqa.prompts.answer import prompt_text
from kbqa.prompts.budget import TokenCounter, fit_prompt, prompt_budget
from kbqa.resources import retriever_for
from kbqa.state import RetrievedRecord

log = logging.getLogger("kbqa.finetune")


def shown_context(prompt: str) -> str:
    """The context block of a rendered prompt (titles included, as cut to the budget): what the
    reader actually sees, which every answer check of the builder reads."""
    context = prompt.split(CONTEXT_MARKER, 1)[-1]
    return context.rsplit("\nQuestion:", 1)[0]


def clean_target(answer: str) -> str:
    """A gold answer as a target: whitespace folded, trailing danda/punctuation dropped."""
    return " ".join(answer.split()).rstrip(TRAILING).strip()


class ExampleBuilder:
    """Renders reader examples with the serving retriever, budget and prompt.

    Args:
        ctx: Serving settings: ``index_dir`` (an index of the training knowledge base),
            ``embedder``, ``k``, ``retry_k``, fusion weights, ``n_ctx``, ``max_answer_tokens``.
        counter: Counts prompt tokens in the reader's tokenizer.
        seed: Seeds the choice of negatives, yes/no examples and inserted gold positions.
    """

    def __init__(self, ctx: Context, counter: TokenCounter, seed: int = 0) -> None:
        self.ctx = ctx
        self.counter = counter
        self.rng = random.Random(seed)
        self.chunks = retriever_for(ctx).chunks
        self.budget = prompt_budget(ctx.n_ctx, ctx.max_answer_tokens)
        self._by_doc: dict[str, list[int]] = {}
        for cid, chunk in enumerate(self.chunks):
            self._by_doc.setdefault(chunk.doc_id, []).append(cid)

    def render(
        self,
        question: str,
        records: Sequence[RetrievedRecord],
        texts: dict[int, str] | None = None,
    ) -> tuple[str, list[int], str, str]:
        """``(prompt, context chunk ids, question type, language)`` as the generate node
        renders them (``texts`` replaces the text of some chunks, by chunk id)."""
        qtype, language = question_type(question), detect_language(question)
        passages = chunk_passages(self.chunks, records)
        if texts:
            passages = [
                (rank, Passage(p.title, texts.get(r["chunk_id"], p.text)))
                for (rank, p), r in zip(passages, records, strict=True)
            ]
        messages, kept, _ = fit_prompt(
            self.counter,
            question,
            passages,
            self.budget,
            style=PROMPT_STYLE,
            question_type=qtype,
            language=language,
        )
        return prompt_text(messages), [records[i]["chunk_id"] for i in kept], qtype, language

    def context_text(self, chunk_ids: Iterable[int]) -> str:
        """The chunk texts joined, for answer checks."""
        return "\n".join(self.chunks[c].text for c in chunk_ids)

    def doc_chunks(self, doc_id: str) -> list[int]:
        """The chunk ids of one document, in order."""
        return list(self._by_doc.get(doc_id, []))

    def gold_chunk(self, doc_id: str | None, answers: Sequence[str]) -> int | None:
        """The first chunk of ``doc_id`` holding a gold answer."""
        for cid in self._by_doc.get(doc_id or "", []):
            if answer_in_context(answers, self.chunks[cid].text):
                return cid
        return None

    def positive(self, q: Question, split: str) -> ReaderExample | None:
        """A ``span`` example, or None when the answer is nowhere in its document (or cannot
        be shown within the budget)."""
        records = retrieve_records(q.question, self.ctx.k, self.ctx)
        prompt, kept, qtype, lang = self.render(q.question, records)
        inserted = False
        if not answer_in_context(q.answers, shown_context(prompt)):
            gold = self.gold_chunk(q.doc_id, q.answers)
            if gold is None:
                return None
            records = self._insert(records, gold)
            prompt, kept, qtype, lang = self.render(q.question, records)
            inserted = True
            if not answer_in_context(q.answers, shown_context(prompt)):
                return None
        shown = shown_context(prompt)
        target = next(
            (clean_target(a) for a in q.answers if answer_in_context([a], shown)),
            clean_target(q.answers[0]),
        )
        rank = self.answer_rank(records, kept, q.answers)
        return ReaderExample(
            q.qid,
            "span",
            split,
            q.doc_id or "",
            q.question,
            prompt,
            target,
            list(q.answers),
            qtype,
            lang,
            kept,
            rank,
            inserted,
        )

    def answer_rank(
        self, records: Sequence[RetrievedRecord], kept: Sequence[int], answers: Sequence[str]
    ) -> int:
        """The rank of the first shown (``kept``) chunk that holds an answer; 0 when none."""
        return next(
            (
                r["rank"]
                for r in records
                if r["chunk_id"] in kept
                and answer_in_context(answers, self.chunks[r["chunk_id"]].text)
            ),
            0,
        )

    def showing(
        self, asked: str, needed: str, doc_id: str | None
    ) -> tuple[list[RetrievedRecord], tuple[str, list[int], str, str]] | None:
        """``(records, rendered)``: ``asked`` rendered (:meth:`render`) over its own retrieval,
        with the first chunk of ``doc_id`` that holds ``needed`` put in at a random rank when
        retrieval missed it; None when ``needed`` cannot be shown."""
        records = retrieve_records(asked, self.ctx.k, self.ctx)
        rendered = self.render(asked, records)
        if answer_in_context([needed], shown_context(rendered[0])):
            return records, rendered
        gold = self.gold_chunk(doc_id, [needed])
        if gold is None:
            return None
        records = self._insert(records, gold)
        rendered = self.render(asked, records)
        if not answer_in_context([needed], shown_context(rendered[0])):
            return None
        return records, rendered

    def _insert(self, records: list[RetrievedRecord], gold: int) -> list[RetrievedRecord]:
        """Replace the lowest-ranked hit with the gold chunk at a random rank (1..k)."""
        ranks = sorted({r["rank"] for r in records})
        keep = [r for r in records if r["rank"] != ranks[-1] and r["chunk_id"] != gold]
        at = self.rng.randint(1, len(ranks)) if ranks else 1
        gold_record: RetrievedRecord = {
            "chunk_id": gold,
            "doc_id": self.chunks[gold].doc_id,
            "score": 0.0,
            "rank": at,
            "is_padding": False,
        }
        out: list[RetrievedRecord] = []
        for r in keep:
            if r["rank"] >= at and gold_record not in out:
                out.append(gold_record)
            out.append({**r, "rank": r["rank"] + (r["rank"] >= at)})
        if gold_record not in out:
            out.append(gold_record)
        return out

    def negative(self, q: Question, split: str) -> ReaderExample | None:
        """An ``abstain`` example: the top ``k`` hits of a ``retry_k`` retrieval among chunks
        without any gold answer (hits and padding alike), or None when none are left."""
        records = retrieve_records(q.question, self.ctx.retry_k, self.ctx)
        clean = [r for r in records if not answer_in_context(q.answers, self._shown(r))]
        ranks = sorted({r["rank"] for r in clean if not r["is_padding"]})[: self.ctx.k]
        chosen = [r for r in clean if r["rank"] in ranks]
        if not chosen:
            return None
        renumber = {rank: i for i, rank in enumerate(ranks, start=1)}
        chosen = [{**r, "rank": renumber[r["rank"]]} for r in chosen]
        prompt, kept, qtype, lang = self.render(q.question, chosen)
        if answer_in_context(q.answers, shown_context(prompt)):  # e.g. the answer is a title
            return None
        return abstention_example(q, "neg", split, prompt, kept, qtype, lang)

    def redacted(self, q: Question, split: str) -> ReaderExample | None:
        """A harder ``abstain`` example: the question's own retrieved context with every
        sentence that holds a gold answer cut out of its chunks, so the passage is on topic
        but no longer answers (as BanglaRQA's unanswerable questions are written against
        their passage). None when nothing is left to cut or the answer survives elsewhere."""
        records = retrieve_records(q.question, self.ctx.k, self.ctx)
        texts: dict[int, str] = {}
        for r in records:
            text = self._text(r)
            if answer_in_context(q.answers, text):
                kept = [s for s in SENTENCE_END.split(text) if not answer_in_context(q.answers, s)]
                texts[r["chunk_id"]] = " ".join(kept)
        if not texts:
            return None
        prompt, kept_ids, qtype, lang = self.render(q.question, records, texts)
        if not set(texts) & set(kept_ids) or answer_in_context(q.answers, shown_context(prompt)):
            return None
        return abstention_example(q, "cut", split, prompt, kept_ids, qtype, lang)

    def unanswerable(self, q: Question, split: str) -> ReaderExample | None:
        """An ``abstain`` example (``QID#unans``) of a question annotated unanswerable against
        its document (SQuAD 2.0's, written to match its paragraph's words): its retrieval, with
        the document's first chunk put in when retrieval missed the document."""
        records = retrieve_records(q.question, self.ctx.k, self.ctx)
        own = self._by_doc.get(q.doc_id or "", [])
        if own and not any(r["chunk_id"] in own for r in records):
            records = self._insert(records, own[0])
        prompt, kept, qtype, lang = self.render(q.question, records)
        return abstention_example(q, "unans", split, prompt, kept, qtype, lang)

    def _text(self, record: RetrievedRecord) -> str:
        return self.chunks[record["chunk_id"]].text

    def _shown(self, record: RetrievedRecord) -> str:
        chunk = self.chunks[record["chunk_id"]]
        return f"{chunk.title}: {chunk.text}"

    def yes_no(
        self, tq: TrainingQuestion, split: str, truth: bool, swap: str
    ) -> ReaderExample | None:
        """A ``yes``/``no`` example from the evidence sentence that holds the answer (see the
        module docstring and :func:`kbqa.finetune.yesno.yes_no_question`), or None when no
        evidence sentence qualifies or it is not in the rendered context."""
        q = tq.question
        made = yes_no_question(tq.evidence, q.answers, truth, swap, self.rng)
        if made is None:
            return None
        asked, original = made
        showing = self.showing(asked, original, q.doc_id)
        if showing is None:  # the evidence cannot be shown
            return None
        _, (prompt, kept, qtype, lang) = showing
        target = (YES if truth else NO)["bn" if lang == "bn" else "en"]
        return ReaderExample(
            f"{q.qid}#{'yes' if truth else 'no'}",
            "yes" if truth else "no",
            split,
            q.doc_id or "",
            asked,
            prompt,
            target,
            [target],
            qtype,
            lang,
            kept,
        )


def abstention_example(
    q: Question, tag: str, split: str, prompt: str, kept: list[int], qtype: str, lang: str
) -> ReaderExample:
    """An ``abstain`` example of ``q`` (id ``QID#tag``): the target is the abstention phrase."""
    return ReaderExample(
        f"{q.qid}#{tag}",
        "abstain",
        split,
        q.doc_id or "",
        q.question,
        prompt,
        ABSTENTION_PHRASE,
        [],
        qtype,
        lang,
        kept,
    )
