"""Question kinds made by rule from the training knowledge base's sentences, for the kinds that
Haque 2020 does not ask and people do (issue 32, part 4): causal (*why*) and list questions, and
lexical traps (a question that matches its passage closely but asks what it does not say).

BanglaRQA asks all three: 137 causal and 165 list questions among its 1,484 validation
questions (``কেন`` ... ``?``; ``কোন কোন`` / ``কী কী`` with a list of spans as the answer), and
its unanswerable questions are written against their own passage. The rules read one sentence:

- :func:`causal_question`: a sentence whose clauses are joined by a causal conjunction (``B,
  কারণ A``; ``A, ফলে B``; ``A কারণে, B``) becomes *why B?* with ``A`` as the answer. Only
  clause-level joins are used: inside a clause (``তিনি অসুস্থতার কারণে পদত্যাগ করেন``) the
  cause phrase has no visible boundary.
- :func:`list_question`: a sentence with an enumeration of at least three items (``A, B ও C``)
  becomes a question with ``কোন কোন`` (before the words that follow it) or ``কী কী`` (where it
  ends the clause) in its place; the answer is the enumeration as written.
- :func:`entity_trap` and :func:`relation_trap`: a question whose rarest word in its passage (a
  name, usually) is swapped for a name the passage does not hold, or whose relation is swapped
  for its opposite (*born* for *died*) when the passage says nothing of the opposite. The
  passage still matches the question's words, but does not answer it: the reader must abstain.
  The trap set of ``benchmarks/data/traps.qa.jsonl`` was written by hand the same way; it is a
  check and was never read by these rules.

Every function is pure (a seeded ``random.Random`` is passed in) and returns None when its rule
does not apply.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence

import regex

from kbqa.answers.normalize import normalize_answer
from kbqa.finetune.yesno import SENTENCE_END, TRAILING

_B, _E = r"(?<![\p{L}\p{M}\u200c\u200d])", r"(?![\p{L}\p{M}\u200c\u200d])"
"""Word edges: a ZWNJ or ZWJ inside a Bangla word is part of it."""
MAX_SENTENCE_WORDS = 80
"""Longer sentences are not read by the causal and list rules (their regular expressions would
take time quadratic in the length; real sentences with a list are far shorter)."""
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


_WORD = regex.compile(r"[\p{L}\p{M}\p{N}\u200c\u200d]+(?:[-'][\p{L}\p{M}\p{N}\u200c\u200d]+)*")
SUFFIXES = ("য়ের", "য়ের", "ের", "এর", "কে", "তে", "য়", "য়", "র")
"""Bangla case endings kept when a name is swapped (``নোবেলের`` -> ``<name>ের``)."""
NAME_TYPES = ("person", "location")
"""Question types whose answers are names (:func:`kbqa.answers.language.question_type`)."""
RARE_CHUNKS = 3
"""A name is in at most this many chunks of the knowledge base (:func:`name_lexicon`)."""


def _stem(word: str) -> tuple[str, str]:
    """``(stem, ending)``: a Bangla case ending split off a word of over three letters more."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)], suffix
    return word, ""


def is_name(word: str) -> bool:
    """A word of three letters or more, without digits, capitalised if it is English."""
    if len(word) < 3 or any(c.isdigit() for c in word) or not _WORD.fullmatch(word):
        return False
    return not word.isascii() or word[0].isupper()


def name_lexicon(
    answered: Iterable[tuple[str, str]], chunk_count: Callable[[str], int] | None = None
) -> dict[str, list[str]]:
    """The names of a training set by type: the words (:func:`is_name`, not question words) of
    the answers of at most three words to its *who* and *where* questions.

    Args:
        answered: ``(question type, answer)`` pairs; types other than :data:`NAME_TYPES` are
            ignored.
        chunk_count: How many chunks of the knowledge base hold a word. With it, only words in
            at most :data:`RARE_CHUNKS` chunks are names: Bangla has no capitals, and its
            *who* and *where* answers hold common nouns too (``আদালত``, ``উপজেলা``).

    Returns:
        ``{type: sorted names}`` for each of :data:`NAME_TYPES`.
    """
    names: dict[str, set[str]] = {t: set() for t in NAME_TYPES}
    for qtype, answer in answered:
        words = answer.split()
        if qtype in names and len(words) <= 3:
            names[qtype].update(
                _stem(w)[0] for w in words if is_name(w) and w.lower() not in QUESTION_WORDS
            )
    if chunk_count is not None:
        names = {t: {n for n in ns if chunk_count(n) <= RARE_CHUNKS} for t, ns in names.items()}
    return {t: sorted(n) for t, n in names.items()}


def entity_trap(
    question: str,
    answers: Sequence[str],
    shown: str,
    names: Mapping[str, Sequence[str]],
    rng: random.Random,
) -> str | None:
    """``question`` with a name that ``shown`` (the passage read) holds swapped for another name
    of the same type that ``shown`` does not hold, so that the passage no longer answers it.

    Args:
        question: The answerable question.
        answers: Its gold answers (their words are never swapped).
        shown: The context the reader is shown.
        names: Names by type (:func:`name_lexicon`): a question word is a name when its stem is
            one, and is swapped for one of the same type.
        rng: Seeded choice of the word and the name.

    Returns:
        The trap question, or None when no question word is a name the passage holds, or
        :data:`NAME_DRAWS` draws found no name of its type and script that ``shown`` lacks.
    """
    kind = {n: t for t, ns in names.items() for n in ns}
    answer_words = {w for a in answers for w in normalize_answer(a).split()}
    context = f" {normalize_answer(shown)} "
    candidates = []
    for m in _WORD.finditer(question):
        word = m.group(0)
        stem, _ = _stem(word)
        if stem not in kind or word.lower() in QUESTION_WORDS:
            continue
        if normalize_answer(word) in answer_words or normalize_answer(stem) in answer_words:
            continue
        if any(f" {normalize_answer(w)} " in context for w in (word, stem)):
            candidates.append((m.start(), word, stem))
    if not candidates:
        return None
    start, word, stem = rng.choice(candidates)
    ending = word[len(stem) :]
    pool = names[kind[stem]]
    for _ in range(NAME_DRAWS):
        name = rng.choice(pool)
        if name == stem or name.isascii() != word.isascii():
            continue
        if f" {normalize_answer(name)} " not in context:
            return str(question[:start] + name + ending + question[start + len(word) :])
    return None


NAME_DRAWS = 50
"""Random draws from the names before an entity trap gives up."""


RELATIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("জন্মগ্রহণ করেন", "মৃত্যুবরণ করেন", ("মৃত্যু", "মারা", "প্রয়াত")),
    ("জন্মগ্রহণ করেছিলেন", "মৃত্যুবরণ করেছিলেন", ("মৃত্যু", "মারা", "প্রয়াত")),
    ("মৃত্যুবরণ করেন", "জন্মগ্রহণ করেন", ("জন্ম",)),
    ("মারা যান", "জন্মগ্রহণ করেন", ("জন্ম",)),
    ("জন্ম", "মৃত্যু", ("মৃত্যু", "মারা", "প্রয়াত")),
    ("মৃত্যু", "জন্ম", ("জন্ম",)),
    ("প্রতিষ্ঠিত হয়", "বিলুপ্ত হয়", ("বিলুপ্ত", "বন্ধ")),
    ("শুরু", "শেষ", ("শেষ", "সমাপ্ত")),
    ("পিতা", "মাতা", ("মাতা", "মা", "মায়ের")),
    ("পিতার", "মাতার", ("মাতা", "মা", "মায়ের")),
    ("বাবা", "মা", ("মাতা", "মা", "মায়ের")),
    ("বাবার", "মায়ের", ("মাতা", "মা", "মায়ের")),
    ("স্বামী", "স্ত্রী", ("স্ত্রী",)),
    ("স্ত্রী", "স্বামী", ("স্বামী",)),
    ("বৃহত্তম", "ক্ষুদ্রতম", ("ক্ষুদ্রতম", "ছোট")),
    ("founded", "dissolved", ("dissolved", "closed", "abolished", "disbanded")),
    ("largest", "smallest", ("smallest",)),
    ("father", "mother", ("mother",)),
    ("mother", "father", ("father",)),
    ("husband", "wife", ("wife",)),
    ("wife", "husband", ("husband",)),
    ("north", "south", ("south",)),
    ("east", "west", ("west",)),
)
"""``(words in the question, their opposite, stems of the opposite)``: a relation trap asks the
opposite, and only when the passage holds none of its stems (so it cannot answer it). Matched as
written (lower case): ``Born`` in a name is not the verb. English birth and death are swapped
with their verb forms (``was X born`` and ``did X die``) before these."""
_RELATION_RES = (
    # English birth and death change the verb's form: "when was X born" / "when did X die"
    (
        regex.compile(r"\b(?:was|were) (?P<who>[^?]{1,60}?) born\b"),
        r"did \g<who> die",
        ("died", "death", "dead", "die"),
    ),
    (regex.compile(r"\bdid (?P<who>[^?]{1,60}?) die\b"), r"was \g<who> born", ("born", "birth")),
    *(
        (regex.compile(rf"{_B}{regex.escape(said)}{_E}"), opposite, absent)
        for said, opposite, absent in RELATIONS
    ),
)


def relation_trap(question: str, shown: str) -> str | None:
    """``question`` with its relation swapped for the opposite (:data:`RELATIONS`), when
    ``shown`` holds no word of the opposite, or None."""
    words = set(normalize_answer(shown).split())
    for pattern, opposite, absent in _RELATION_RES:
        if pattern.search(question) is None:
            continue
        if any(
            w == stem or (len(stem) >= 3 and w.startswith(stem)) for w in words for stem in absent
        ):
            continue  # a short stem (মা) must be the whole word: মাস is not মা
        return str(pattern.sub(opposite, question, count=1))
    return None
