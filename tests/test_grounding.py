"""Grounded reading: the span constraint masks tokens that leave the context, and snapping
replaces a free answer by the closest context span."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import Field

from kbqa.answers.reading import generate_answer
from kbqa.answers.snap import complete_last_word, ground_answer, grounded, snap_to_span
from kbqa.context import Context
from kbqa.llm.fake import ScriptedChatModel
from kbqa.llm.grounding import SpanConstraint, word_starts
from kbqa.prompts import ABSTENTION_PHRASE, Passage

TOKENS = {
    0: "<eos>",
    1: " ঢাকা",
    2: " শহর",
    3: "র",
    4: " Context",
    5: "-এ তথ্য নেই",
    6: " প্যারিস",
    7: "\n",
    8: " বড়",
}
END = 0


def _constraint(context: str = "ঢাকা বড় শহর। ঢাকার নদী") -> SpanConstraint:
    return SpanConstraint(
        lambda t: TOKENS[t].encode("utf-8") if t else b"",
        [context],
        [ABSTENTION_PHRASE, "হ্যাঁ", "না"],
        prompt_tokens=2,
        end_tokens=[END],
    )


def _pick(constraint: SpanConstraint, generated: list[int], prefer: list[int]) -> int:
    """The greedy choice after masking, with logits ranking ``prefer`` best first."""
    scores = np.full(len(TOKENS), -10.0, dtype=np.float32)
    for rank, token in enumerate(prefer):
        scores[token] = 10.0 - rank
    out = constraint(np.array([99, 98, *generated]), scores)
    return int(np.argmax(out))


def test_first_token_must_open_a_span_or_a_fixed_answer() -> None:
    c = _constraint()
    assert _pick(c, [], [6, 1]) == 1  # " প্যারিস" is not in the context
    assert _pick(c, [], [4, 6]) == 4  # the abstention phrase is allowed
    assert c.masked_steps == 1


def test_continuation_follows_the_context_bytes() -> None:
    c = _constraint()
    assert _pick(c, [1], [2, 8]) == 8  # "ঢাকা শহর" is not in the context, "ঢাকা বড়" is
    assert _pick(c, [1], [3]) == 3  # "ঢাকার" is (a case ending joins in the context)
    assert _pick(c, [4], [5]) == 5  # the abstention phrase continues


def test_end_is_allowed_only_after_some_answer() -> None:
    c = _constraint()
    assert _pick(c, [], [END, 1]) == 1
    assert _pick(c, [1], [END, 2]) == END
    assert _pick(c, [1], [7]) == 7  # a line break ends the answer like a stop sequence


def test_nothing_in_reach_ends_the_answer() -> None:
    c = _constraint()
    assert _pick(c, [1, 8], [6]) == END


def test_a_span_starts_at_a_character_not_inside_one() -> None:
    """A byte token that is the middle of a Bangla character (a UTF-8 continuation byte) is a
    substring of the context's bytes but not a span: allowed, the real reader once wrote
    ``▁`` then 0x9f bytes until its token limit, read as an empty reply."""
    pieces = {0: b"", 1: b" ", 2: b"\x9f", 3: " পদ্মা".encode(), 4: "প".encode()[:1]}
    text = "পদ্মা বাংলাদেশের একটি প্রধান নদী।"
    assert b"\x9f" in text.encode("utf-8")  # the lure: the byte is in the context
    c = SpanConstraint(pieces.__getitem__, [text], [], prompt_tokens=2, end_tokens=[0])
    scores = np.array([-10.0, -10.0, 10.0, 5.0, 4.0], dtype=np.float32)  # 0x9f preferred
    for generated in ([], [1]):  # first, or after a lone space (the lead-in before a word)
        out = c(np.array([99, 98, *generated]), scores)
        assert not np.isfinite(out[2]) and int(np.argmax(out)) == 3, generated
    assert c.allowed(b" ", 4)  # the first byte of a character may start the span
    # nor a run of spaces in its place: one lead-in, then the best token that opens a span,
    # looked for beyond the reader's best candidates
    c = SpanConstraint(pieces.__getitem__, [text], [], prompt_tokens=2, end_tokens=[0], top_n=2)
    scores = np.array([-10.0, 9.0, 10.0, 5.0, -20.0], dtype=np.float32)  # 0x9f, space, then a span
    assert int(np.argmax(c(np.array([99, 98]), scores))) == 1
    assert int(np.argmax(c(np.array([99, 98, 1]), scores))) == 3


def test_a_span_starts_at_a_word_not_at_other_punctuation_nor_inside_a_word() -> None:
    """The tuned reader, denied the abstention phrase, spelt a danda's first two bytes (in the
    context: the danda) and then, the danda denied too, bytes that are no text until its token
    limit; another time it began inside a word (``ঙ্গার`` of ``গঙ্গার``)."""
    text = "পদ্মা গঙ্গার শাখা। (১৯৭১) Paris-Orly"
    danda = "।".encode()
    pieces = [b"", b" ", danda[:1], danda[:2], "ঙ্গার".encode(), " গঙ্গার".encode(), "১৯৭১".encode(),
              b"Orly", b"-", b"(", " শাখা".encode(), "প".encode()[:2], b"ris"]  # fmt: skip
    c = SpanConstraint(pieces.__getitem__, [text], [ABSTENTION_PHRASE], prompt_tokens=2,
                       end_tokens=[0])  # fmt: skip
    for so_far, token in [(b" ", 3), (b"", 4), (b" ", 4), (b"", 8), (b"", 12)]:
        assert not c.allowed(so_far, token), (so_far, pieces[token])
    for so_far, token in [
        (b" ", 2),
        (b" ", 5),
        (b"", 6),
        (b"", 7),
        (b" ", 11),
        (b"", 1),
        (b" ", 9),
    ]:  # fmt: skip  (a bracket or a quote before a word may open)
        assert c.allowed(so_far, token), (so_far, pieces[token])
    assert c.allowed(" গঙ্গার".encode(), 10)  # once begun, the span goes on across words
    assert c.allowed(b" Pa", 12)  # and inside them
    assert c.allowed(b"", 2) and not c.allowed(b"", 3)  # a cut-off first character: whose?
    # the danda path, as the reader took it: after the space it is refused, a word is taken
    scores = np.full(len(pieces), -10.0, dtype=np.float32)
    scores[[3, 5]] = [9.0, 2.0]
    assert int(np.argmax(c(np.array([99, 98, 1]), scores))) == 5


def test_an_answer_ends_only_once_it_holds_a_word() -> None:
    """A break-it finding: the end was allowed after a lone quote, bracket, currency sign or
    the first byte of a character (where no abstention threshold masks it)."""
    text = "একে “খান” বলা হয় (বাহাটেপাক) ৳১৫১.৫"
    pieces = [b"", "“".encode(), b"(", "৳".encode(), "খ".encode()[:1], "খান".encode(), b"\n"]
    c = SpanConstraint(pieces.__getitem__, [text], [], prompt_tokens=2, end_tokens=[0])
    for so_far in (b"", b" ", "“".encode(), b"(", "৳".encode(), "খ".encode()[:1]):
        assert not c.allowed(so_far, 0) and not c.allowed(so_far, 6), so_far
    assert c.allowed("“খান".encode(), 0) and c.allowed("৳১৫১".encode(), 6)
    scores = np.array([9.0, -5.0, -5.0, -5.0, -5.0, 1.0, 8.0], dtype=np.float32)
    assert int(np.argmax(c(np.array([99, 98, 1]), scores))) == 5  # after “ the word, not the end


def test_a_passage_with_a_lone_surrogate_is_read() -> None:
    c = SpanConstraint(lambda t: b"abc", ["\ud800abc"], [], prompt_tokens=0, end_tokens=[])
    assert c.allowed(b"", 0)


def test_word_starts_are_byte_offsets_of_words() -> None:
    context = "ঢাকা (১৯৭১), the Seine's bank, ‘পেরিপ্লাস’ 'পালা O'Brien var_x মিল্\u200cস".encode()
    starts = word_starts(context)
    found = sorted(i for offsets in starts.values() for i in offsets)
    words = [context[i:].decode()[:4] for i in found]
    assert words == [
        "ঢাকা",
        "(১৯৭",
        "১৯৭১",
        "the ",
        "Sein",
        "bank",
        "‘পের",
        "পেরি",
        "'পাল",
        "পালা",
        "O'Br",
        "var_",
        "মিল্",
    ]  # fmt: skip  (nothing inside a word)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("বুড়িগঙ্গা", "বুড়িগঙ্গা"),  # already in the context
        ("বুড়িগঙ্গা নদীর তীর", "বুড়িগঙ্গা নদীর তীরে"),  # the context's own span
        ("the Seine river", "Seine"),  # SQuAD normalisation drops articles
        ("Tokyo", "Tokyo"),  # nothing close: left alone
        ("১৯১৩ সালের", "১৯১৩ সালে"),
    ],
)
def test_snap_to_span(answer: str, expected: str) -> None:
    passages = [
        "ঢাকা বুড়িগঙ্গা নদীর তীরে অবস্থিত। তিনি ১৯১৩ সালে নোবেল পান।",
        "Paris lies on the Seine, in France.",
    ]
    assert snap_to_span(answer, passages) == expected


def test_grounding_setting_is_checked() -> None:
    assert Context(grounding="snap", web_search="off").grounding == "snap"
    with pytest.raises(ValueError, match="grounding must be one of off, snap, constrained"):
        Context(grounding="loose", web_search="off")  # type: ignore[arg-type]


class Recording(ScriptedChatModel):
    """A scripted tuned-style reader that records the keywords of every call."""

    prompt_style: str = "tuned"
    reader_abstention_threshold: float = 0.0
    seen: list[dict[str, Any]] = Field(default_factory=list)

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        self.seen.append(kw)
        return super()._stream(messages, stop, run_manager, **kw)


def test_constrained_generation_hands_the_passages_to_the_model() -> None:
    model = Recording(model_name="fake/rec", mode="script", script=["ঢাকা"])
    seen = model.seen
    passages = [(1, Passage("ঢাকা", "ঢাকা বাংলাদেশের রাজধানী।"))]
    for grounding in ("off", "constrained"):
        ctx = Context(grounding=grounding, web_search="off")  # type: ignore[arg-type]
        generate_answer(model, ctx, "রাজধানী কোথায়?", passages, language="bn")
    assert "grounding" not in seen[0]
    assert seen[1]["grounding"] == ["ঢাকা বাংলাদেশের রাজধানী।"]
    assert seen[1]["fixed"] == [ABSTENTION_PHRASE, "হ্যাঁ", "না"]


def test_abstention_threshold_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="abstention_threshold must be in"):
        Context(abstention_threshold=1.5, web_search="off")


def test_the_readers_own_threshold_applies_unless_the_context_sets_one() -> None:
    model = Recording(
        model_name="fake/rec", mode="script", script=["ঢাকা"],
        reader_abstention_threshold=0.4,
    )  # fmt: skip
    seen = model.seen
    passages = [(1, Passage("ঢাকা", "ঢাকা বাংলাদেশের রাজধানী।"))]
    for threshold in (None, 0.7, 0.0):
        ctx = Context(abstention_threshold=threshold, web_search="off")
        generate_answer(model, ctx, "রাজধানী কোথায়?", passages, language="bn")
    assert seen[0]["abstention_threshold"] == 0.4  # the reader's own
    assert seen[0]["abstention_phrase"] == ABSTENTION_PHRASE
    assert seen[1]["abstention_threshold"] == 0.7  # the context overrides it
    assert "abstention_threshold" not in seen[2]  # 0: plain greedy decoding


PASSAGES = [
    "সাউদার্ন ক্যালিফোর্নিয়া বিশ্ববিদ্যালয় এবং ইউএস আর্মি রিসার্চ ল্যাবরেটরি একসঙ্গে কাজ করে।",
    "Mercury melts at -38.83 °C.",
]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("ইউএস আর্মি রিসার্চ ল্যাবরেটরি", "ইউএস আর্মি রিসার্চ ল্যাবরেটরি"),  # a span
        ("-38.83 °C", "-38.83 °C"),
        ("mercury MELTS", "mercury MELTS"),  # normalised: case
        ("ইউএস আর্মি রিসার্চ ল্যাবরেট", "ইউএস আর্মি রিসার্চ ল্যাবরেটরি"),  # cut off by the budget
        ("1920°C", ""),  # invented (a real reply of the untuned 270M reader)
        ("1000000000000000000000000000000", ""),
        ("ল্যাবরেট", "ল্যাবরেটরি"),
        ("রেটরি", ""),  # inside a word, not its start
        ("38.8", ""),  # a number is never completed (38.83 is another number)
        ("হ্যাঁ", "হ্যাঁ"),  # yes/no words need no passage
        ("No", "No"),
    ],
)
def test_ground_answer_keeps_only_what_a_passage_holds(answer: str, expected: str) -> None:
    assert ground_answer(answer, PASSAGES) == expected


def test_ground_answer_without_passages_has_nothing_to_check() -> None:
    assert ground_answer("1920°C", []) == "1920°C"


def test_grounded_is_whole_words() -> None:
    assert grounded("Seine", ["It lies on the Seine."])
    assert not grounded("Sei", ["It lies on the Seine."])
    assert not grounded("", ["It lies on the Seine."])
    assert complete_last_word("lies on the Sei", ["It lies on the Seine."]) == "lies on the Seine"
