"""The abstention threshold governs every way the reader can begin the abstention phrase: any
tokenisation of its start, after any lead-in of whitespace or punctuation.

Offline: :class:`kbqa.llm.fake.ScriptedLlama` decodes greedily from scripted logits through the
real :class:`~kbqa.llm.chat.LlamaCppChatModel` and its processors. Integration: the shipped
tuned reader (Gemma 3 270M + LoRA) at threshold 1 never begins the phrase.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbqa.answers.abstention import judge
from kbqa.answers.reading import Reading, generate_answer
from kbqa.context import Context
from kbqa.llm.chat import LlamaCppChatModel
from kbqa.llm.fake import EOS, ScriptedLlama
from kbqa.llm.threshold import AbstentionThreshold, phrase_tokens
from kbqa.prompts import ABSTENTION_PHRASE, Passage

QUESTION = "বাংলাদেশের রাজধানী কোথায়?"
PASSAGES = [(1, Passage("ঢাকা", "ঢাকা বাংলাদেশের রাজধানী ও বৃহত্তম শহর।"))]
VOCAB = [" ", '"', "C", "Con", " Con", "Cont", " Context", "Context", " context", "ontext",
         "text", "-এ তথ্য নেই", "-", "এ", " তথ্য", " নেই", " ঢাকা", "ঢাকা", "Context-এ তথ্য নেই।",
         "\n", " Chicago"]  # fmt: skip
FINISH = {
    # once begun, the phrase goes on to its end, and the answer ends
    " Context": {"-এ তথ্য নেই": 9.0},
    "Context": {"-এ তথ্য নেই": 9.0},
    " context": {"-এ তথ্য নেই": 9.0},
    "C": {"ontext": 9.0},
    "Con": {"text": 9.0},
    " Con": {"text": 9.0},
    '"Context': {"-এ তথ্য নেই": 9.0},
    ' "Con': {"text": 9.0},
    ' "Context': {"-এ তথ্য নেই": 9.0},
}

READERS: dict[str, dict[str, dict[str, float]]] = {
    # each would write the phrase by greedy decoding; the answer ঢাকা is its second choice
    "the usual token": {"": {" Context": 6.0, " ঢাকা": 3.0}},
    "lower case": {"": {" context": 6.0, " ঢাকা": 3.0}},
    "a lone space first": {"": {" ": 6.0, " ঢাকা": 3.0}, " ": {"Context": 6.0, "ঢাকা": 3.0}},
    "a one-letter start": {"": {"C": 6.0, " ঢাকা": 3.0}},
    "a three-letter start": {"": {"Con": 6.0, " Con": 5.0, " ঢাকা": 3.0}},
    "a quote first": {"": {'"': 6.0, " ঢাকা": 3.0}, '"': {"Context": 6.0, "ঢাকা": 3.0}},
    "two lead-ins": {
        "": {" ": 6.0, " ঢাকা": 3.0},
        " ": {'"': 6.0, "ঢাকা": 3.0},
        ' "': {"Con": 6.0, "ঢাকা": 3.0},
    },
    "one token holding the whole phrase": {"": {"Context-এ তথ্য নেই।": 6.0, " ঢাকা": 3.0}},
    # no words at all: an empty reply is an abstention too (the shipped reader, denied the
    # phrase, writes a lone space and then a line break)
    "a space, then a line break": {"": {" ": 6.0, " ঢাকা": 3.0}, " ": {"\n": 6.0, "ঢাকা": 3.0}},
    "the end at once": {"": {EOS: 6.0, " ঢাকা": 3.0}},
}


def reader(logits: dict[str, dict[str, float]]) -> LlamaCppChatModel:
    """The tuned-style reader over a scripted stand-in for llama.cpp."""
    model = LlamaCppChatModel(model_name="fake/llama", prompt_style="tuned")
    model._llama = ScriptedLlama(VOCAB, {**FINISH, **logits})
    return model


def read(
    model: LlamaCppChatModel, threshold: float, grounding: str = "constrained"
) -> tuple[Reading, str, bool]:
    """The reading at ``threshold`` (0: none) and its judged answer."""
    ctx = Context(abstention_threshold=threshold, grounding=grounding,  # type: ignore[arg-type]
                  web_search="off")  # fmt: skip
    reading = generate_answer(model, ctx, QUESTION, PASSAGES, language="bn")
    answer, abstained = judge(reading.raw, QUESTION, ABSTENTION_PHRASE)
    return reading, answer, abstained


@pytest.mark.parametrize("grounding", ["off", "constrained"])
@pytest.mark.parametrize("way", sorted(READERS))
def test_at_threshold_1_the_reader_never_abstains_by_itself(way: str, grounding: str) -> None:
    model = reader(READERS[way])
    if grounding == "off":  # (the span constraint alone already stops some of these)
        greedy, _, abstained = read(model, 0.0, grounding)  # no threshold: it writes the phrase
        assert abstained, greedy.raw
    reading, answer, abstained = read(model, 1.0, grounding)
    assert not abstained and answer == "ঢাকা", reading.raw
    assert reading.abstention_threshold == 1.0
    p = reading.abstention_probability
    assert p is not None and 0.0 < p < 1.0
    if grounding == "off":  # the whole path to the phrase is counted
        assert p > 0.8


@pytest.mark.parametrize("way", sorted(READERS))
def test_the_threshold_decides_exactly_by_the_recorded_probability(way: str) -> None:
    """At ``t`` the reading is the whole phrase when the probability recorded at threshold 1 is
    ``>= t``, else the threshold-1 reply (what benchmarks/threshold_replay.py relies on)."""
    model = reader(READERS[way])
    never, _, _ = read(model, 1.0, "off")
    p = never.abstention_probability
    assert p is not None
    for t in (0.05, p - 1e-6, p + 1e-6, 0.999):
        reading, _, abstained = read(model, t, "off")
        if p >= t:
            assert abstained and ABSTENTION_PHRASE.lower() in reading.raw.lower(), reading.raw
            assert reading.abstention_probability == pytest.approx(p)
        else:
            assert reading.raw == never.raw and not abstained, (t, reading.raw)


def softmax_share(logits: dict[str, float], starts: set[str]) -> float:
    rest = len(VOCAB) + 1 - len(logits)  # every other token has ScriptedLlama.UNLIKELY
    weights = {t: math.exp(v) for t, v in logits.items()}
    total = sum(weights.values()) + rest * math.exp(ScriptedLlama.UNLIKELY)
    return sum(w for t, w in weights.items() if t in starts) / total


def test_the_probability_is_the_total_over_every_start_and_every_lead_in() -> None:
    first = {" Context": 2.0, "C": 1.5, " Con": 1.0, " ": 3.0, " ঢাকা": 2.5}
    second = {"Context": 4.0, "ঢাকা": 1.0}
    reading, _, _ = read(reader({"": first, " ": second}), 1.0)
    starts = {" Context", "C", " Con", "Con", "Context"}
    p_space = softmax_share(first, {" "})
    expected = softmax_share(first, starts) + p_space * softmax_share(second, starts)
    assert reading.abstention_probability == pytest.approx(expected, rel=1e-5)


def test_the_probability_streams_with_the_first_piece_that_holds_a_word() -> None:
    model = reader(READERS["a lone space first"])
    settings = {"abstention_threshold": 1.0, "abstention_phrase": ABSTENTION_PHRASE}
    chunks = [c for c in model.stream("q", max_tokens=8, **settings) if c.content]
    assert [c.content for c in chunks] == [" ", "ঢাকা"]
    told = [c.response_metadata.get("abstention_probability") for c in chunks]
    whole = model.invoke("q", **settings).response_metadata["abstention_probability"]
    assert told[0] is None and told[1] == pytest.approx(whole) and whole > 0.9


def test_phrase_tokens_are_every_start_with_or_without_a_lead_in() -> None:
    vocab = [" Context", " context", " Cont", "Co", "C", " c", '"Con', "Context-এ তথ্য নেই।",
             " Chicago", "-এ", " ", '"', "", "ঢাকা", "CONTEXT", "\n\n", "ঢাকা।"]  # fmt: skip
    found = phrase_tokens(lambda t: vocab[t].encode(), len(vocab), ABSTENTION_PHRASE, ["\n", "।"])
    assert [vocab[t] for t in found.starts] == [
        " Context", " context", " Cont", "Co", "C", " c", '"Con', "Context-এ তথ্য নেই।", "CONTEXT",
    ]  # fmt: skip
    assert {vocab[t] for t in found.inside} >= {"C", "Co", "-এ", " ", "CONTEXT"}
    assert " Context" not in {vocab[t] for t in found.inside}  # the phrase has no such piece
    assert [vocab[t] for t in found.stopping] == ["Context-এ তথ্য নেই।", "\n\n", "ঢাকা।"]


def test_a_cut_utf8_character_can_begin_a_bangla_phrase() -> None:
    phrase = "তথ্য নেই"
    vocab = [phrase.encode()[:2], b" " + phrase.encode()[:4], "न".encode()[:2], b"\xff"]
    found = phrase_tokens(lambda t: vocab[t], len(vocab), phrase)
    assert list(found.starts) == [0, 1]


def test_the_decision_waits_for_the_first_token_after_a_lead_in() -> None:
    vocab = [" ", "C", "ঢাকা"]
    found = phrase_tokens(lambda t: vocab[t].encode(), len(vocab), ABSTENTION_PHRASE)
    rule = AbstentionThreshold(found, 0.5, prompt_tokens=2, token_bytes=lambda t: vocab[t].encode())
    scores = np.log(np.array([0.6, 0.3, 0.1]))
    out = rule(np.array([9, 9]), scores)  # p 0.3 < 0.5: "C" masked, the space allowed
    assert np.isinf(out[1]) and int(np.argmax(out)) == 0
    out = rule(np.array([9, 9, 0]), np.log(np.array([0.1, 0.5, 0.4])))  # 0.3 + 0.6 * 0.5 >= 0.5
    assert rule.probability == pytest.approx(0.6) and rule.abstaining
    assert int(np.argmax(out)) == 1 and np.isinf(out[[0, 2]]).all()


def test_a_stop_spelt_byte_by_byte_cannot_end_a_reply_without_a_word() -> None:
    """The shipped reader under the span constraint wrote ``▁`` and then ``।`` one byte at a
    time: the stop sequence cut the reply to nothing, an abstention by the back door."""
    vocab = [b"", b" ", b"\xe0", b"\xa5", b"\xa4", "ঢাকা".encode(), b"\n"]
    found = phrase_tokens(lambda t: vocab[t], len(vocab), ABSTENTION_PHRASE, ["\n", "।"])
    assert list(found.stopping) == [4, 6]  # the danda's last byte completes it
    rule = AbstentionThreshold(found, 1.0, prompt_tokens=1, token_bytes=lambda t: vocab[t],
                               end_tokens=[0])  # fmt: skip
    scores = np.zeros(len(vocab))
    for taken in ([], [1], [1, 2], [1, 2, 3]):  # nothing shown yet: still deciding
        out = rule(np.array([9, *taken]), scores)
        assert np.isinf(out[[0, 6]]).all()  # neither the end nor a line break
    assert np.isinf(out[4]) and np.isfinite(out[5])  # nor the byte that makes "।"
    assert np.isfinite(rule(np.array([9, 1, 5]), scores)).all()  # a word: the reply is free


@pytest.mark.integration
def test_the_real_reader_at_threshold_1_never_abstains_by_itself() -> None:
    """The shipped reader abstains on these passages by itself; at threshold 1 it may not."""
    from kbqa.llm.models import load_chat_model, model_installed
    from kbqa.llm.threshold import begins, core

    if not model_installed("gemma3-270m"):
        pytest.skip("the Gemma 3 270M GGUF is not installed")
    model = load_chat_model("gemma3-270m-reader", 2048, 0)
    cases = [
        ("মঙ্গল গ্রহের প্রথম মেয়রের ফোন নম্বর কত?", "পদ্মা বাংলাদেশের একটি প্রধান নদী। এটি গঙ্গার প্রধান শাখা।"),
        ("আইফেল টাওয়ারের উচ্চতা কত?", "রবীন্দ্রনাথ ঠাকুর ১৮৬১ সালে কলকাতায় জন্মগ্রহণ করেন।"),
        ("Who founded the university?", "Paris is the capital of France. It lies on the Seine."),
        ("পদ্মা নদীর দৈর্ঘ্য কত?", "পদ্মা বাংলাদেশের একটি প্রধান নদী।"),
    ]  # fmt: skip
    target = core(ABSTENTION_PHRASE.encode())
    abstained_alone = 0
    for question, text in cases:
        passages = [(1, Passage("", text))]
        own = generate_answer(model, Context(n_ctx=2048, web_search="off"), question, passages)
        abstained_alone += judge(own.raw, question, ABSTENTION_PHRASE)[1]
        ctx = Context(n_ctx=2048, abstention_threshold=1.0, web_search="off")
        reading = generate_answer(model, ctx, question, passages)
        assert not begins(core(reading.raw.encode()), target), (question, reading.raw)
        assert ABSTENTION_PHRASE.lower() not in reading.raw.lower(), (question, reading.raw)
        # nor an empty reply: it answers, and finalize's grounding judges that answer
        assert not judge(reading.raw, question, ABSTENTION_PHRASE)[1], (question, reading.raw)
        # with a word of the passage, not a sign spelt byte by byte (` ॰` once)
        assert any(ch.isalnum() for ch in reading.raw), (question, reading.raw)
        p = reading.abstention_probability
        assert p is not None and 0.0 <= p < 1.0
    assert abstained_alone >= 2  # the cases test something: the reader does abstain on them
