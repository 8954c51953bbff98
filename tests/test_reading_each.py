"""``--reading each``: every hit read on its own, the answer of the reading least likely to
abstain (kbqa.answers.reading.choose_reading), with fake readers (no model file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from kbqa.answers.reading import choose_reading
from kbqa.context import Context
from kbqa.graph import graph
from kbqa.llm.fake import ScriptedChatModel
from kbqa.passages import hit_windows
from kbqa.prompts import ABSTENTION_PHRASE, CONTEXT_MARKER
from kbqa.resources import Resources


def _context(prompt: str) -> str:
    """The passages of a reader prompt (after its few-shot examples, before the question)."""
    return prompt.split(CONTEXT_MARKER)[-1].split("\nQuestion:")[0].split("]", 1)[-1]


class ByPassageReader(ScriptedChatModel):
    """Answers with the first word of the prompt's context; its probability of abstaining is
    0.2 when the context holds ``পদ্মা``, else 0.9 (a threshold decides as a real reader's)."""

    prompts: list[str] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        prompt = str(messages[-1].content)
        self.prompts.append(prompt)
        context = _context(prompt)
        p = 0.2 if "পদ্মা" in context else 0.9
        threshold = float(kwargs.get("abstention_threshold") or 0.0)
        text = ABSTENTION_PHRASE if threshold < 1.0 and p >= threshold else context.split()[0]
        message = AIMessage(content=text, response_metadata={"abstention_probability": p})
        return ChatResult(generations=[ChatGeneration(message=message)])


def _ask(
    index: Path, reading: str, threshold: float, **settings: Any
) -> tuple[dict[str, Any], ByPassageReader]:
    reader = ByPassageReader(prompts=[])
    ctx = Context(index_dir=str(index), embedder="fake/hash", model="fake/abstain", k=3,
                  pad_previous=False, verify=False, fallback=False, web_search="off",
                  cross_check="off", reading=reading,  # type: ignore[arg-type]
                  abstention_threshold=threshold, resources=Resources(reader=reader),
                  **settings)  # fmt: skip
    return graph.invoke({"question": "বাংলাদেশের প্রধান নদী কোনটি?"}, context=ctx), reader


def test_each_hit_is_read_apart_and_the_surest_reading_answers(tiny_index: Path) -> None:
    out, reader = _ask(tiny_index, "each", 0.7, stop_reading_below=0.0)
    readings = out["readings"]
    assert len(reader.prompts) == len(readings) == 3  # one prompt a hit
    assert [r["chunk_ids"] for r in readings] == [[r["chunk_id"]] for r in out["retrieved"]]
    assert sum("পদ্মা" in _context(p) for p in reader.prompts) == 1
    chosen = next(r for r in readings if r["abstention_probability"] == 0.2)
    assert [r["abstained"] for r in readings].count(False) == 1 and not chosen["abstained"]
    assert out["answer"] == chosen["answer"] == "পদ্মা" and not out["abstained"]
    assert out["context_chunk_ids"] == chosen["chunk_ids"]
    assert [s["chunk_id"] for s in out["sources"]] == chosen["chunk_ids"]  # it cites that hit
    assert out["abstention_probability"] == 0.2 and out["abstention_threshold"] == 0.7


def test_a_sure_reading_stops_the_reading(tiny_index: Path) -> None:
    """--stop-reading-below: the hits after a reading that answered with an abstention
    probability below the setting are not read; an unsure or abstaining one reads on."""
    every, _ = _ask(tiny_index, "each", 0.7, stop_reading_below=0.0)
    sure = next(i for i, r in enumerate(every["readings"]) if r["abstention_probability"] == 0.2)
    assert sure < 2  # the fixture's question finds the river's chunk before the last hit
    out, reader = _ask(tiny_index, "each", 0.7, stop_reading_below=0.3)
    assert len(reader.prompts) == len(out["readings"]) == sure + 1
    assert out["readings"] == every["readings"][: sure + 1] and out["answer"] == "পদ্মা"
    _, reader = _ask(tiny_index, "each", 0.7, stop_reading_below=0.2)  # 0.2 is not below 0.2
    assert len(reader.prompts) == 3
    out, reader = _ask(tiny_index, "each", 0.1, stop_reading_below=0.3)  # each one abstains
    assert len(reader.prompts) == 3 and out["abstained"]


def test_an_evaluation_counts_every_hit_read_as_the_context(tiny_index: Path) -> None:
    """answer-in-context asks whether the answer was in anything the reader read: every hit."""
    from kbqa.evals.runner import run_question

    reader = ByPassageReader(prompts=[])
    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash", model="fake/abstain", k=3,
                  pad_previous=False, verify=False, fallback=False, web_search="off",
                  cross_check="off", reading="each", abstention_threshold=0.7,
                  stop_reading_below=0.0, resources=Resources(reader=reader))  # fmt: skip
    out = run_question("বাংলাদেশের প্রধান নদী কোনটি?", ctx)
    read = [c for r in out["readings"] for c in r["chunk_ids"]]
    assert len(out["context_chunk_ids"]) == 1 and len(read) == 3
    assert len(out["context_text"].split("\n")) == 3


def test_the_retry_reads_jointly(tiny_index: Path) -> None:
    reader = ByPassageReader(prompts=[])
    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash", model="fake/abstain", k=2,
                  retry_k=4, max_retries=1, pad_previous=False, verify=False, fallback=False,
                  web_search="off", cross_check="off", reading="each",
                  abstention_threshold=0.1, resources=Resources(reader=reader))  # fmt: skip
    out = graph.invoke({"question": "বাংলাদেশের প্রধান নদী কোনটি?"}, context=ctx)
    assert out["retries"] == 1 and len(reader.prompts) == 2 + 1  # two hits apart, one retry
    assert out["readings"] == []  # the last reading was joint


def test_every_reading_abstaining_is_an_abstention(tiny_index: Path) -> None:
    out, _ = _ask(tiny_index, "each", 0.1)
    assert all(r["abstained"] for r in out["readings"]) and out["abstained"]
    assert out["abstention_probability"] == 0.2  # the least sure abstention's


def test_an_english_question_s_abstaining_readings_read_in_english(tiny_index: Path) -> None:
    """Every reading of an English question abstains: each says so with the English phrase,
    as the final answer does, not with the Bangla one the reader was prompted with."""
    reader = ByPassageReader(prompts=[])
    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash", model="fake/abstain", k=3,
                  pad_previous=False, verify=False, fallback=False, web_search="off",
                  cross_check="off", reading="each", abstention_threshold=0.1,
                  stop_reading_below=0.0, resources=Resources(reader=reader))  # fmt: skip
    out = graph.invoke({"question": "Which is the main river of Bangladesh?"}, context=ctx)
    assert out["language"] == "en" and out["abstained"] and len(out["readings"]) > 1
    assert {r["answer"] for r in out["readings"]} == {ctx.abstention_phrase_en}
    assert out["answer"] == ctx.abstention_phrase_en != ABSTENTION_PHRASE
    bangla, _ = _ask(tiny_index, "each", 0.1)  # a Bangla question's keep the Bangla phrase
    assert {r["answer"] for r in bangla["readings"]} == {ABSTENTION_PHRASE}


def test_joint_reading_reads_once_and_keeps_no_readings(tiny_index: Path) -> None:
    out, reader = _ask(tiny_index, "joint", 0.7)
    assert len(reader.prompts) == 1 and out["readings"] == []
    assert out["abstention_probability"] == 0.2  # the joint context holds পদ্মা too


def test_choose_reading() -> None:
    assert choose_reading([(False, 0.5), (False, 0.1), (True, 0.05)]) == 1  # answered first
    assert choose_reading([(True, 0.9), (True, 0.8)]) == 1
    assert choose_reading([(False, 0.3), (False, 0.3)]) == 0  # a tie: the better rank
    assert choose_reading([(False, None), (False, None)]) == 0
    assert choose_reading([(False, None), (False, 0.01)]) == 1  # no probability ranks last
    assert choose_reading([(True, None), (True, 0.6)]) == 1
    with pytest.raises(ValueError, match="at least one reading"):
        choose_reading([])


def test_hit_windows_keep_padding_with_its_hit() -> None:
    records: list[Any] = [
        {"chunk_id": 4, "rank": 1, "is_padding": True},
        {"chunk_id": 5, "rank": 1, "is_padding": False},
        {"chunk_id": 9, "rank": 2, "is_padding": False},
        {"chunk_id": 1, "rank": 3, "is_padding": True},
        {"chunk_id": 2, "rank": 3, "is_padding": False},
    ]
    assert hit_windows(records) == [[0, 1], [2], [3, 4]]


def test_reading_is_checked() -> None:
    with pytest.raises(ValueError, match="reading"):
        Context(reading="every")  # type: ignore[arg-type]
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="stop_reading_below"):
            Context(stop_reading_below=bad)
