"""Follow-up questions in a conversation: "আর তিনি কবে জন্মেছিলেন?" ("and when was he born?")
rewritten into a standalone question before retrieval, from the thread's last turn.

Rules, not a model (the 270M reader cannot rewrite reliably):

- A question is a follow-up when it holds a referring pronoun (``তিনি``, ``তাঁর``, ``এটি``,
  ``he``, ``his``, ``it``, ``there``...) or opens with ``আর`` / ``and`` / ``what about``.
- The referent is the last answer when the last question asked for a person (for ``he``,
  ``she``, ``তিনি``...) or a place (for ``there``, ``সেখানে``), else the topic: what the last
  question asked about. That is the title of the page the last answer was read from when the
  question names it or the answer is that page's subject; otherwise the question's subject
  (:func:`question_subject`: the words before a Bangla question word, the capitalised name of
  an English question), because the page an answer happens to be read from is often about
  something else (after "আহসান মঞ্জিল কোন নদীর তীরে অবস্থিত?" answered from a page on tourism
  in Bangladesh, "এটি" is আহসান মঞ্জিল). After "Who wrote Gitanjali?" -> "Rabindranath Tagore",
  "he" is the answer; after "When was the Eiffel Tower built?", "it" is "Eiffel Tower".
- A demonstrative and its noun (``এই জাদুঘর``, ``this museum``) refer to the last answer when
  the last question asked for that noun (``কোন জাদুঘরে ...?``, ``which museum ...?``), else to
  the page title when the title holds it; they become the referent with the noun kept
  (``ল্যুভর জাদুঘর``, with its case ending: ``এই জাদুঘরের`` -> ``ল্যুভর জাদুঘরের``). Other
  Bangla demonstratives are left alone; English ``this`` before another word stays the pronoun
  of a thing (``When was this built?``), so ``this town`` after the Eiffel Tower is not
  caught.
- The pronoun is replaced by the referent (a possessive by its genitive: ``তাঁর`` ->
  ``রবীন্দ্রনাথ ঠাকুরের``, ``his`` -> ``Rabindranath Tagore's``), and a leading ``আর`` /
  ``and`` is dropped. A question that is not a follow-up, or has no usable last turn, is kept.

``benchmarks/followup_rewrite.py`` measures it on 20 written follow-ups.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import regex

from kbqa.answers.aligned import same_stem
from kbqa.answers.vocabulary import BN_QUESTION_WORDS

PERSON = {
    "bn": {"তিনি", "সে", "উনি", "তাঁকে", "তাকে", "ওনাকে"},
    "en": {"he", "she", "him", "they", "them"},
}
PERSON_GENITIVE = {"bn": {"তাঁর", "তার", "ওনার", "তাঁদের", "তাদের"}, "en": {"his", "her", "their"}}
THING = {"bn": {"এটি", "এটা", "সেটি", "সেটা", "ওটি"}, "en": {"it", "this"}}
THING_GENITIVE = {"bn": {"এর", "এটির", "সেটির", "এটার"}, "en": {"its"}}
PLACE = {"bn": {"সেখানে", "সেখানকার", "ওখানে"}, "en": {"there"}}
DEMONSTRATIVE = {"bn": {"এই", "ওই", "সেই"}, "en": {"this"}}  # "that" is mostly a conjunction
"""Determiners that point back when their noun echoes the last turn (see the module docstring)."""
WHICH = {"bn": {"কোন"}, "en": {"which", "what"}}  # not কোনো ("any")
"""Words before the noun a question asks for (``কোন জাদুঘরে``, ``which museum``)."""
_EN_ENDING = regex.compile(r"(?:'s|s'|es|s)$")
LEADING = regex.compile(r"^\s*(?:আর|এবং|and|what about|how about)\b[\s,]*", regex.I)
_WORD = regex.compile(r"[\p{L}\p{M}\u200c\u200d']+")
"""A word: letters, marks and the zero-width (non-)joiners Bangla writes inside words
(``র\u200d্যাব``, ``হরাইজন্\u200cস``), which must not split one."""
_DET_NOUN = {
    lang: regex.compile(
        r"(?P<det>" + "|".join(sorted(words, key=len, reverse=True)) + r")\s+"
        r"(?P<noun>[\p{L}\p{M}\u200c\u200d']+)|[\p{L}\p{M}\u200c\u200d']+",
        regex.I,
    )
    for lang, words in DEMONSTRATIVE.items()
}
"""A demonstrative and the word after it, else one word (the words :func:`standalone_question`
replaces)."""
_EN_NAME = regex.compile(
    r"(?:[\p{Lu}][\p{L}\p{M}'.-]*)(?:\s+(?:of\s+|the\s+|de\s+)?[\p{Lu}][\p{L}\p{M}'.-]*)*"
)
"""An English name: capitalised words, ``of`` / ``the`` between them (``Bank of England``)."""
_BN_GENITIVE = regex.compile(r"(?:ের|(?<=[\u09be-\u09cc\u0985-\u0994])র)$")
"""A Bangla genitive ending (``সৈকতের``, ``সেতুর``), for a subject's possessor."""
_EN_POSSESSIVE = regex.compile(r"(?:'s|')$")
SUBJECT_WORDS = 5
"""Most words a question's subject may have; a longer run is a clause, not a name."""
_BN_VOWEL_END = regex.compile(r"[\u09be-\u09cc\u0985-\u0994]$")
"""A Bangla word ending in a vowel or vowel sign takes ``র`` for the genitive, others ``ের``."""


@dataclass(frozen=True, slots=True)
class LastTurn:
    """What a follow-up may refer to.

    Attributes:
        question: The last (standalone) question.
        answer: Its answer ("" when it abstained).
        question_type: Its type (``person``, ``location``, ...).
        title: The title of the page its answer was read from ("" when none).
    """

    question: str
    answer: str
    question_type: str
    title: str


def is_followup(question: str, language: str) -> bool:
    """The question refers back: a referring pronoun or demonstrative, or a leading ``আর`` /
    ``and``."""
    lang = "bn" if language == "bn" else "en"
    words = {w.lower() for w in _WORD.findall(question)}
    pronouns = (
        PERSON[lang]
        | PERSON_GENITIVE[lang]
        | THING[lang]
        | THING_GENITIVE[lang]
        | PLACE[lang]
        | DEMONSTRATIVE[lang]
    )
    return bool(words & pronouns) or bool(LEADING.match(question))


def _same_noun(a: str, b: str, lang: str) -> bool:
    """One noun in two forms: Bangla case endings (``জাদুঘরে``, ``জাদুঘরটির``: :func:`same_stem`),
    English plurals and possessives (``museum``, ``museums``, ``museum's``)."""
    if lang == "bn":
        return same_stem(a, b)
    return bool(_EN_ENDING.sub("", a.lower()) == _EN_ENDING.sub("", b.lower()))


def _asked_nouns(question: str, lang: str) -> list[str]:
    """The words after ``কোন`` / ``which`` / ``what`` in ``question`` (the noun it asks for),
    and in English the word before ``which`` too (``the museum which holds ...``)."""
    words = _WORD.findall(question)
    pairs = list(itertools.pairwise(words))
    nouns = [str(b) for a, b in pairs if a.lower() in WHICH[lang]]
    return nouns + [str(a) for a, b in pairs if lang == "en" and b.lower() == "which"]


def _with_noun(referent: str, noun: str, lang: str) -> str:
    """``referent`` with ``noun`` after it; its last word given the noun's case ending when it
    is that noun (``ল্যুভর জাদুঘরে`` + ``জাদুঘরের`` -> ``ল্যুভর জাদুঘরের``); alone when the noun is
    another of its words (``Victory Stele of Naram-Sin`` + ``stele``)."""
    words = referent.split()
    if words and _same_noun(words[-1], noun, lang):
        return referent if lang == "en" else " ".join([*words[:-1], noun])
    if any(_same_noun(w, noun, lang) for w in words):
        return referent
    return f"{referent} {noun}"


def _demonstrative_referent(noun: str, last: LastTurn, lang: str) -> str:
    """What ``এই NOUN`` / ``this NOUN`` refers to in ``last`` ("" when nothing)."""
    asked = _asked_nouns(last.question, lang)
    if last.answer and any(_same_noun(a, noun, lang) for a in asked):
        return last.answer
    if any(_same_noun(w, noun, lang) for w in last.title.split()):
        return last.title
    return ""


def question_subject(question: str, lang: str) -> str:
    """What ``question`` asks about ("" when no short subject is found): in Bangla the words
    before its first question word (at most :data:`SUBJECT_WORDS`); in English its longest
    capitalised name, the first word of the question left out."""
    words = [str(w) for w in _WORD.findall(question)]
    if lang == "bn":
        first = next((i for i, w in enumerate(words) if w in BN_QUESTION_WORDS), None)
        if not first or first > SUBJECT_WORDS:
            return ""
        phrase = words[:first]
        # "পদ্মা সেতুর দৈর্ঘ্য": the bridge, not its length; the last possessor, since a name may
        # end like a genitive itself ("কক্সবাজার সমুদ্র সৈকতের")
        owners = [i for i, word in enumerate(phrase[:-1]) if _BN_GENITIVE.search(word)]
        if owners:
            i = owners[-1]
            return " ".join([*phrase[:i], _BN_GENITIVE.sub("", phrase[i])])
        return " ".join(phrase)
    if not any(ch.islower() for ch in question):  # all capitals: no name stands out
        return ""
    body = question.split(maxsplit=1)[1] if len(question.split()) > 1 else ""
    names = sorted((str(m.group(0)) for m in _EN_NAME.finditer(body)), key=len, reverse=True)
    name = _EN_POSSESSIVE.sub("", names[0]) if names else ""
    return name if len(name.split()) <= SUBJECT_WORDS else ""


def topic(last: LastTurn, lang: str) -> str:
    """What ``last`` asked about: the page title when the question names it or the answer is
    it, else the question's subject, else the page title, else the answer."""
    from kbqa.answers.normalize import normalize_answer

    title, asked = normalize_answer(last.title), f" {normalize_answer(last.question)}"
    answer = normalize_answer(last.answer)
    subject = question_subject(last.question, lang)
    if title and (f" {title}" in asked or (answer and (title in answer or answer in title))):
        # the question's own name when it holds the title ("Brightwater Tower", page "tower")
        return subject if title in normalize_answer(subject) else last.title
    return subject or last.title or last.answer


def _genitive(referent: str, lang: str) -> str:
    if lang == "en":
        return f"{referent}'" if referent.endswith("s") else f"{referent}'s"
    return referent + ("র" if _BN_VOWEL_END.search(referent) else "ের")


def standalone_question(question: str, language: str, last: LastTurn | None) -> str:
    """``question`` with its referring words replaced from ``last`` (see the module docstring),
    or ``question`` unchanged when it is not a follow-up or nothing can be referred to.

    Args:
        question: The user's question.
        language: ``bn`` or ``en`` (the classify node's).
        last: The thread's last turn, or None at the start of a thread.
    """
    if last is None or not is_followup(question, language):
        return question
    lang = "bn" if language == "bn" else "en"
    if not _WORD.search(LEADING.sub("", question)):  # a bare "and" / "আর": nothing to ask
        return question
    if not regex.search(r"[\p{L}\p{N}]", last.answer):  # "?" or "": no answer to refer to
        last = LastTurn(last.question, "", last.question_type, last.title)
    about = topic(last, lang)
    # after a "who" ("where") question left unanswered, "he" ("there") has no referent: the
    # page or the question's subject is not the person asked for
    person = last.answer if last.question_type == "person" else about
    place = last.answer if last.question_type == "location" else about
    thing = about
    if not (person or place or thing):
        return question
    replaced = False

    def swap(m: regex.Match[str]) -> str:
        nonlocal replaced
        if m.group("det") is not None:
            det, noun = str(m.group("det")), str(m.group("noun"))
            referent = _demonstrative_referent(noun, last, lang) if last is not None else ""
            if referent:
                replaced = True
                return _with_noun(referent, noun, lang)
            # no referent: each word on its own ("this" alone is a pronoun of a thing)
            gap = str(m.group(0))[len(det) : m.start("noun") - m.start()]
            return swap_word(det) + gap + swap_word(noun)
        return swap_word(str(m.group(0)))

    def swap_word(word: str) -> str:
        nonlocal replaced
        low = word.lower()
        for words, referent, genitive in (
            (PERSON[lang], person, False),
            (PERSON_GENITIVE[lang], person, True),
            (THING[lang], thing, False),
            (THING_GENITIVE[lang], thing, True),
            (PLACE[lang], place, False),
        ):
            if low in words and referent:
                replaced = True
                if words is PLACE[lang] and lang == "en":
                    return f"in {referent}"
                return _genitive(referent, lang) if genitive else referent
        return word

    body = str(LEADING.sub("", question))
    out = str(_DET_NOUN[lang].sub(swap, body))
    if not replaced:  # "আর ঢাকা?" / "and Dhaka?": nothing to fill in
        return question if body == question else body[:1].upper() + body[1:]
    return out[:1].upper() + out[1:] if lang == "en" else out


def topic_title(question: str, titles: list[str]) -> str:
    """The page a turn was about, for a later follow-up to refer to: the first cited title that
    the question names (at a word start, so ``রবীন্দ্রনাথ ঠাকুরের`` names ``রবীন্দ্রনাথ ঠাকুর``),
    else the first cited title ("" when none). An answer read from a page about something else
    (a list of Asian Nobel laureates) does not change the topic."""
    from kbqa.answers.normalize import normalize_answer

    asked = f" {normalize_answer(question)}"
    for title in titles:
        norm = normalize_answer(title)
        if norm and f" {norm}" in asked:
            return title
    return titles[0] if titles else ""
