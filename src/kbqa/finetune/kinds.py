"""Question kinds made by rule from the training knowledge base's sentences, for the kinds that
Haque 2020 does not ask and people do (issue 32, part 4): causal (*why*) and list questions. The
lexical traps (a question that matches its passage closely but asks what it does not say) are in
:mod:`kbqa.finetune.traps`.

BanglaRQA asks both: 137 causal and 165 list questions among its 1,484 validation questions
(``কেন`` ... ``?``; ``কোন কোন`` / ``কী কী`` with a list of spans as the answer). The rules read
one sentence (or two, for a causal join across them):

- :func:`causal_question`: a sentence whose clauses are joined by a causal conjunction (``B,
  কারণ A``; ``A, ফলে B``; ``A কারণে, B``) becomes *why B?* with ``A`` as the answer. Only
  clause-level joins are used: inside a clause (``তিনি অসুস্থতার কারণে পদত্যাগ করেন``) the
  cause phrase has no visible boundary.
- :func:`list_question`: a sentence with an enumeration of at least three items (``A, B ও C``)
  becomes a question with ``কী কী`` in its place; the answer is the enumeration as written.
Every function is pure (a seeded ``random.Random`` is passed in) and returns None when its rule
does not apply.
"""

from __future__ import annotations

import random

import regex

from kbqa.finetune.yesno import SENTENCE_END, TRAILING

WORD_START, WORD_END = r"(?<![\p{L}\p{M}\u200c\u200d])", r"(?![\p{L}\p{M}\u200c\u200d])"
"""Word edges: a ZWNJ or ZWJ inside a Bangla word is part of it."""
MAX_SENTENCE_WORDS = 80
"""Longer sentences are not read by the causal and list rules (their regular expressions would
take time quadratic in the length; real sentences with a list are far shorter)."""
MADE_KINDS = ("why", "list")
"""The kinds ``--rule-kinds`` names (a trap is asked for with ``--trap-ratio``)."""
MAX_ANSWER_WORDS = 12
"""Longest answer a rule may make: the reader's answer budget is 32 tokens (about 12 Bangla
words)."""
MIN_CLAUSE_WORDS, MAX_EFFECT_WORDS = 3, 20
"""Shortest and longest clause that a causal question may ask about."""

# "B, কারণ A" / "B কেননা A": A is the cause, after the conjunction (``কারণ`` without the comma
# is the noun *reason*: ``মৃত্যুর কারণ জানতে চাই``).
_BECAUSE = regex.compile(r"^(?P<effect>.+?)(?:,\s+কারণ,?|,?\s+(?:কেননা|কেন না),?)\s+(?P<cause>.+)$")
# The same across two sentences: "B। কারণ, A" and "A। ফলে, B".
_NEXT_BECAUSE = regex.compile(r"^(?:কারণ|কেননা),?\s+(?P<cause>.+)$")
_NEXT_SO = regex.compile(r"^(?:ফলে|এর ফলে|সেজন্য|তাই),?\s+(?P<effect>.+)$")
# "A, ফলে B" / "A, যার ফলে B" / "A কারণে, B" / "A জন্য, B": A is the cause, before it.
_SO = regex.compile(r"^(?P<cause>.+?),\s+(?:যার\s+)?(?:ফলে|সেজন্য|তাই)\s+(?P<effect>.+)$")
_CAUSE_FIRST = regex.compile(r"^(?P<cause>.+?\s(?:কারণে|ফলে|জন্য|জন্যে)),\s+(?P<effect>.+)$")
QUESTION_WORDS = frozenset(  # the question words an entity trap never swaps
    [
        "কী",
        "কি",
        "কে",
        "কারা",
        "কোন",
        "কোনটি",
        "কোথায়",
        "কবে",
        "কত",
        "কেন",
        "কীভাবে",
        "কিভাবে",
        "কাকে",
        "কার",
        "কাদের",
        "কয়টি",
        "কয়টি",
        "কতটি",
        "কতজন",
        "কিসের",
        "কীসের",
        "কোথা",
        "কোথাকার",
        "who",
        "what",
        "when",
        "where",
        "which",
        "why",
        "how",
        "whom",
        "whose",
    ]
)
LIGHT_VERBS = frozenset(
    [
        "হয়",
        "হয়েছে",
        "হয়েছিল",
        "হয়েছিলো",
        "হন",
        "হয়েছেন",
        "হয়েছিলেন",
        "হবে",
        "করে",
        "করেন",
        "করেছে",
        "করেছেন",
        "করেছিল",
        "করেছিলেন",
        "করত",
        "করতেন",
        "যায়",
        "যান",
        "গেছে",
        "গিয়েছিল",
        "গিয়েছিলেন",
        "দেয়",
        "দেন",
        "দিয়েছে",
        "দিয়েছিল",
        "পায়",
        "পান",
        "পেয়েছে",
        "পেয়েছিল",
        "নেয়",
        "নেন",
        "নিয়েছে",
        "নিয়েছিল",
        "থাকে",
        "থাকেন",
        "আছে",
        "ছিল",
        "ছিলেন",
        "রয়েছে",
    ]
)
"""Verbs that end a Bangla compound verb (``প্রতিষ্ঠিত হয়``, ``বেড়ে যায়``): *why* goes before
the word they follow."""


def sentences(text: str) -> list[str]:
    """``text`` cut after each danda, ``!`` or ``?``, whitespace folded, end marks dropped;
    sentences over :data:`MAX_SENTENCE_WORDS` words are left out."""
    out = (" ".join(s.split()).rstrip(TRAILING) for s in SENTENCE_END.split(text))
    return [s for s in out if s and len(s.split()) <= MAX_SENTENCE_WORDS]


def ask_why(effect: str, rng: random.Random) -> str:
    """*Why* ``effect``? in one of the two orders BanglaRQA uses: ``কেন`` at the end
    (``... হ্রাস পাবে কেন?``) or before the verb (``... কেন হ্রাস পাবে?``)."""
    words = effect.split()
    if rng.random() < 0.5 or len(words) < 3:
        return f"{effect} কেন?"
    at = len(words) - (2 if words[-1] in LIGHT_VERBS else 1)
    return " ".join([*words[:at], "কেন", *words[at:]]) + "?"


def causal_pairs(text: str) -> list[tuple[str, str]]:
    """``(effect, cause)`` clauses of ``text`` joined by a causal conjunction: inside a sentence
    (``B, কারণ A``; ``A, ফলে B``; ``A কারণে, B``) or across two (``B। কারণ, A``; ``A। ফলে,
    B``)."""
    out = []
    said = sentences(text)
    for i, sentence in enumerate(said):
        for pattern in (_BECAUSE, _SO, _CAUSE_FIRST):
            m = pattern.match(sentence)
            if m is not None:
                out.append((m["effect"], m["cause"]))
                break
        if i == 0:
            continue
        if (m := _NEXT_BECAUSE.match(sentence)) is not None:
            out.append((said[i - 1], m["cause"]))
        elif (m := _NEXT_SO.match(sentence)) is not None:
            out.append((m["effect"], said[i - 1]))
    return out


CONNECTIVES = frozenset(["কিন্তু", "তবে", "ফলে", "আর", "এবং", "তাই", "অথচ", "বরং"])
"""Words that join a clause to the one before; dropped from the start of an asked clause."""


def _unjoined(clause: str) -> str:
    """``clause`` without its leading connectives (:data:`CONNECTIVES`) and edge commas."""
    words = clause.strip(" ,").split()
    while words and words[0].strip(",") in CONNECTIVES:
        words = words[1:]
    return " ".join(words).strip(" ,")


def causal_question(effect: str, cause: str, rng: random.Random) -> tuple[str, str] | None:
    """``(question, answer)``: *why* ``effect``, answered by ``cause`` (a pair of
    :func:`causal_pairs`, a leading connective dropped), or None when the effect is not
    :data:`MIN_CLAUSE_WORDS` to :data:`MAX_EFFECT_WORDS` words, the cause is not 2 to
    :data:`MAX_ANSWER_WORDS` words, or the effect is a question."""
    cause, effect = _unjoined(cause), _unjoined(effect)
    n_cause, n_effect = len(cause.split()), len(effect.split())
    if not MIN_CLAUSE_WORDS <= n_effect <= MAX_EFFECT_WORDS or not 2 <= n_cause <= MAX_ANSWER_WORDS:
        return None
    if "?" in effect or QUESTION_WORDS & set(effect.split()):
        return None
    return ask_why(effect, rng), cause


_TOKEN = r"[^\s,;:।()\[\]\"'?!‘’“”]+"
# The comma-delimited middle of an enumeration: ", X, Y ও" (its items are exactly bounded).
_MIDDLE = regex.compile(rf"(?:,\s(?:{_TOKEN})(?:\s{_TOKEN})?)+,?\s(?:ও|এবং|আর)\s")
_LIST_WORDS = frozenset(["ও", "এবং", "আর", "বা", "অথবা", "কিংবা"])
SAYING = frozenset(["হলো", "হল", "বলেন", "বলে", "বলেছেন", "জানান", "জানায়", "জানানো"])
"""Verbs that end a clause before a comma: an item next to one is not a list item."""


def list_question(sentence: str) -> tuple[str, str] | None:
    """``(question, answer)``: ``sentence`` with an enumeration of three or more items (``A, B
    ও C``) asked in place as ``কী কী``, or None when it has none.

    The comma-delimited middle items fix the item length (one or two words, all alike; two-word
    items need two of them); the first and last items take as many words. So ``অস্ট্রেলিয়া,
    সিঙ্গাপুর, হংকং ও জাপান`` is a list, and ``কীরকম একপেশে, কেন্দ্রীয় তথ্য ও সম্প্রচার`` (a
    clause before the comma) is not. The boundaries are a guess where the items' length is not
    visible: ``সব স্কুল, বিশ্ববিদ্যালয় ও ডে কেয়ার`` gives ``স্কুল, বিশ্ববিদ্যালয় ও ডে``. The answer
    is the enumeration as written."""
    sentence = " ".join(sentence.split()).rstrip(TRAILING)
    if len(sentence.split()) > MAX_SENTENCE_WORDS:
        return None
    m = _MIDDLE.search(sentence)
    if m is None:
        return None
    core = m.group(0)
    items = [i for i in regex.split(r",\s|,?\s(?:ও|এবং|আর)\s", core) if i.strip()]
    lengths = {len(i.split()) for i in items}
    if len(lengths) != 1:
        return None
    n = lengths.pop()
    if len(items) < n:  # two-word items need two of them between commas to be a list
        return None
    before, after = sentence[: m.start()].split(), sentence[m.end() :].split()
    if len(before) < n or len(after) < n:
        return None
    first, last = before[-n:], after[:n]
    words = {*first, *last, *(w for i in items for w in i.split())}
    if words & (_LIST_WORDS | LIGHT_VERBS | SAYING) or not regex.fullmatch(_TOKEN, first[0]):
        return None
    answer = " ".join(first) + core + " ".join(last)
    asked = " ".join([*before[:-n], "কী কী", *after[n:]])
    if len(asked.split()) < 4:
        return None
    return asked + "?", answer
