"""Answer clean-up: from a model's raw output to the short span a user reads.

Two steps, both here: :func:`clean_answer` reads the answer line out of a reader's raw output
(before the abstention check judges it), and :func:`postprocess` with :func:`snap_to_context`
shapes the final answer (the ``finalize`` node), after the cross-check, verifier, fallback or
web stage may have replaced it; :func:`drop_year_word` is its last step, after grounding.
"""

from __future__ import annotations

import regex

from kbqa.answers.vocabulary import YES_NO_FORMS, YES_NO_PATTERN, yes_no_in

_LABEL = regex.compile(
    r"^\s*((উত্তর|উত্তরঃ|answer)\s*[:ঃ\-–]|(a|ans)\s*:|\[\s*\d+\s*\]\s*:?"
    r"|(\(\s*[\p{N}\p{L}]{1,2}\s*\)\s*)+)\s*",
    regex.I,
)
"""A leading answer label, a passage citation marker such as ``[3]`` (the prompt numbers
passages and small models copy the number) or list markers (``(১)``, ``(ক)``, ``(1) (2)``:
Gemma 3 270M starts lists that way)."""
_CITATION = regex.compile(r"\s*\[\s*\d+\s*\]\s*:?\s*")
"""A passage number inside the answer (``Dhaka [2]``)."""
_BARE_LABELS = frozenset({"উত্তর", "answer", "ans"})
_QUOTES = "\"'“”‘’«»`*_[](){}"
_TRAILING = " \t।.,;:!|-–—"


def clean_answer(raw: str, max_chars: int = 200) -> str:
    """Strip what small models wrap around a short answer.

    Keeps the first line that is not empty once a label is removed (``Answer:\nDhaka`` ->
    ``Dhaka``), removes ``উত্তর:`` / ``Answer:`` labels, list markers and passage numbers
    (``[2]``), surrounding quotes,
    brackets and markdown emphasis, and a trailing danda or full stop; folds spaces; cuts to
    ``max_chars`` at a word boundary.
    """
    line = ""
    for candidate in raw.splitlines():  # the first line with something left after a label
        candidate = _CITATION.sub(" ", candidate)
        for _ in range(3):
            candidate = _LABEL.sub("", candidate).strip().strip(_QUOTES).strip().rstrip(_TRAILING)
        if candidate and candidate.lower().rstrip("ঃ:") not in _BARE_LABELS:
            line = candidate
            break
    return cut_answer(" ".join(_CITATION.sub(" ", line).split()), max_chars)


def cut_answer(answer: str, max_chars: int) -> str:
    """``answer`` cut to ``max_chars`` characters, at a word boundary when one is in its second
    half."""
    if len(answer) <= max_chars:
        return answer
    cut = answer.rfind(" ", 0, max_chars)
    return answer[: cut if cut > max_chars // 2 else max_chars]


_EXPLANATION = regex.compile(
    r"(?:,\s*)?(?:\bbecause\b|\bsince\b|\bas stated\b|\baccording to\b|\bwhich is\b|"
    r"কারণ|যেহেতু|অনুযায়ী|\(.*)\s.*$",
    regex.I,
)
_YES_NO = regex.compile(rf"^({YES_NO_PATTERN})\b[\s,.;:!।-]", regex.I)
_LEADING_PREPOSITION = regex.compile(r"^(?:on|in|at|since|by|from|around|about)\s+(?=\S)", regex.I)
_YEAR_WORD = regex.compile(
    r"^([০-৯0-9]{3,4}(?:\s*[-–—]\s*[০-৯0-9]{2,4})?)\s+"
    r"(?:সাল|সালে|সালের|খ্রিস্টাব্দ|খ্রিস্টাব্দে|খ্রিস্টাব্দের|খ্রিষ্টাব্দ|খ্রিষ্টাব্দে|খ্রিষ্টাব্দের)$"
)
"""A year (three or four Bangla or ASCII digits, or a range of years) and nothing but its
Bangla year word (``১৯৭১ সালে``, "in the year 1971"; ``৫৩২ খ্রিষ্টাব্দের``, "of 532 AD")."""
_FORMAT_CHARS = regex.compile(r"\p{Cf}")


YES_NO_IN = {
    language: {form: yes_no_in(language, form) or "" for form in YES_NO_FORMS}
    for language in ("bn", "en")
}
"""A yes/no word in the question's language (Gemma answers a Bangla question ``yes``):
:func:`kbqa.answers.vocabulary.yes_no_in` as a table."""


def postprocess(
    answer: str, question_type: str, titles: list[str], language: str | None = None
) -> str:
    """Type-aware clean-up of a short answer (type-aware RAG seed's strict post-processing).

    - a leading passage title the model copied from the prompt (``Jacksonville,_Florida: ...``)
      is dropped;
    - an explanation after the answer (``because ...``, ``কারণ ...``, a parenthesis) is cut;
    - yes/no answers are reduced to ``হ্যাঁ``/``না``/``Yes``/``No``, and a bare yes/no word
      is given in the question's ``language`` (``bn``/``en``; ``yes`` -> ``হ্যাঁ``) when known;
    - date and location answers lose a leading English preposition (``in 1903`` -> ``1903``).

    A Bangla year word is dropped later (:func:`drop_year_word`), once the answer is grounded.
    """
    for title in titles:
        for form in {title, title.replace(" ", "_")}:
            if form and answer.startswith(f"{form}:") and len(answer) > len(form) + 2:
                answer = answer[len(form) + 1 :].strip()
    cut = _EXPLANATION.sub("", answer).strip(" ,;:")
    answer = cut or answer
    if question_type == "yes/no" and (m := _YES_NO.match(answer + " ")):
        word = m.group(1)
        answer = {"হ্যা": "হ্যাঁ", "yes": "Yes", "no": "No"}.get(word.lower(), word)
    if language in YES_NO_IN and answer.lower() in YES_NO_IN[language]:
        answer = YES_NO_IN[language][answer.lower()]
    if question_type in ("date", "location"):
        answer = _LEADING_PREPOSITION.sub("", answer)
    return answer.rstrip(_TRAILING)


def drop_year_word(answer: str) -> str:
    """``answer`` without its Bangla year word when it is a year and that word only
    (``১৯৭১ সালে`` -> ``১৯৭১``, ``২০২০-২১ সালের`` -> ``২০২০-২১``), whatever the question's type;
    any other answer unchanged (``১৮১৭ সালের ১২ জুন``, ``১৯৯৬ সাল থেকে``).

    The shortest span that answers is the convention of SQuAD and BanglaRQA, whose validation
    answers give a four-digit year bare 88 times and with a year word 6 times; Haque 2020, the
    reader's training data, keeps the word in 50 of its 91, so the reader learned to write it.
    ``finalize`` applies it after grounding: a passage must hold the year with its word (``১৯৭১
    জন`` does not ground ``১৯৭১ সালে``). Trailing punctuation and format characters (ZWNJ, ZWJ)
    do not hide the word.
    """
    bare = _FORMAT_CHARS.sub("", answer).strip().rstrip(_TRAILING + "\u00a0॥৷…").strip()
    m = _YEAR_WORD.match(bare)
    return m.group(1) if m else answer
