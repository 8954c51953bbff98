"""The training example of the reader and of the verifier: the record, its kinds, the JSON
Lines file that holds them (``OUT/examples.jsonl`` of ``kbqa finetune reader|verifier``), and
the counts of a build (``OUT/data.json``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbqa.corpus.loaders import read_jsonl_objects
from kbqa.errors import InputError

KINDS = ("span", "abstain", "yes", "no")
VERIFIER_KINDS = ("keep", "fix", "answer", "abstain")
"""A verifier example's kind: the reader's answer was right (``keep``: repeat it), wrong
(``fix``: the gold answer), an abstention on an answerable question (``answer``), or the
context lacks the answer (``abstain``: the phrase)."""
PROMPT_STYLE = "tuned"
"""The prompt style a fine-tuned reader is trained and served with."""


@dataclass(slots=True)
class ReaderExample:
    """One supervised reader example.

    Attributes:
        qid: Source question id (with ``#yes`` / ``#no`` / ``#neg`` for derived examples).
        kind: ``span``, ``abstain``, ``yes`` or ``no``.
        split: ``train`` or ``val``.
        doc_id: The source question's document.
        question: The question as shown in the prompt.
        prompt: The exact text the reader reads (:func:`kbqa.prompts.answer.prompt_text`).
        target: What it must answer (no leading space, no end-of-sequence).
        answers: Gold alternatives (empty for ``abstain``), for scoring generations.
        question_type: The classify node's type.
        language: ``bn`` or ``en``.
        context_chunk_ids: Chunks of the training index in the prompt, in order.
        gold_rank: Rank of the first hit holding the answer (0: none, for ``abstain``).
        gold_inserted: True when retrieval missed the answer and the gold chunk was put in.
        candidate: A verifier example's candidate: the tuned reader's answer it is shown (the
            abstention phrase when the reader abstained); empty for reader examples.
    """

    qid: str
    kind: str
    split: str
    doc_id: str
    question: str
    prompt: str
    target: str
    answers: list[str]
    question_type: str
    language: str
    context_chunk_ids: list[int] = field(default_factory=list)
    gold_rank: int = 0
    gold_inserted: bool = False
    candidate: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON Lines."""
        return asdict(self)


def write_examples(path: Path, examples: Iterable[ReaderExample]) -> None:
    """Write examples as JSON Lines (atomically)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for ex in examples:
            fh.write(json.dumps(ex.to_dict(), ensure_ascii=False) + "\n")
    tmp.replace(path)


def read_examples(path: Path) -> Iterator[ReaderExample]:
    """Read examples written by :func:`write_examples`.

    Raises:
        InputError: A line that is not an example object.
    """
    for lineno, obj in read_jsonl_objects(path):
        if isinstance(obj, InputError):
            raise obj
        try:
            yield ReaderExample(**obj)
        except TypeError as exc:
            raise InputError(f"{path}:{lineno}: not a reader example: {exc}") from None


@dataclass(slots=True)
class DataStats:
    """Counts of one build, for the training report."""

    questions: int = 0
    usable: int = 0
    unusable: int = 0
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    gold_inserted: int = 0
    gold_first: int = 0
    no_negative_context: int = 0
    paraphrased: int = 0
    made: dict[str, int] = field(default_factory=dict)
    """Examples of the rule kinds (``why``, ``list``, ``trap``) among them."""

    def count(self, example: ReaderExample) -> None:
        """Add one example."""
        split = self.by_kind.setdefault(example.split, dict.fromkeys(KINDS, 0))
        split[example.kind] += 1
        if example.kind == "span":
            self.gold_inserted += example.gold_inserted
            self.gold_first += example.gold_rank == 1

    def negative_ratio(self, split: str = "train") -> float:
        """Abstention targets over all examples of ``split``."""
        kinds = self.by_kind.get(split, {})
        total = sum(kinds.values())
        return kinds.get("abstain", 0) / total if total else 0.0
