"""Bangla synonyms for the ``synonym`` paraphrase rule (:mod:`kbqa.finetune.paraphrase`), from a
dictionary that installs from PyPI: ``shobdo`` (Apache-2.0; 45,630 headwords with their meanings,
in SQLite), whose first meaning of a word usually lists its synonyms (``লম্বা``: ``দীর্ঘ;
বিস্তৃত``; ``জিজ্ঞাসাবাদ``: ``জেরা``).

Why: the reader abstains on people's questions whose content words are not the passage's
(``docs/finetune-log.md``, "Why the reader abstains on people's questions"), and Haque 2020's
questions share their evidence sentence's words. A question asked with a synonym teaches the
reader that the fact, not the word, must match.

The dictionary's first meanings also hold glosses and homonyms of common words (``হয়`` *is* ->
``অশ্ব`` *horse*), so a synonym is kept only when (:func:`synonym_table`):

- its headword is a noun or an adjective (``বিশেষ্য``, ``বিশেষণ``) of at least
  :data:`MIN_CHARS` characters, not one of the :data:`COMMON_WORDS` commonest words of the
  training knowledge base (common words are where the homonyms are), not a word of a name
  in the training answers and not a number word (:data:`NUMBER_WORDS`);
- it is one or two words of Bangla script, none a number word, each found at least
  :data:`MIN_COUNT` times in that knowledge base (a gloss or an archaic word is not).

Of 15 questions of Haque 2020 rewritten by the rule before the name filter, about three in
five read right (``অনুমতি`` -> ``অনুমোদন``, ``বিদ্যালয়`` -> ``স্কুল``); the rest took another
sense (``হাজির`` -> ``বর্তমান``), a word of a name (``লীলা`` of *Sanjay Leela Bhansali*) or a
gloss (``চলমান`` -> ``চলছে এমন``); of 12 after it, nine. A noisy rule, opt-in, to be judged by
the reader it trains (``docs/finetune.md``).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path

import regex

from kbqa.errors import KBQAError

COMMON_WORDS = 400
"""The commonest words of the training knowledge base, never replaced (their dictionary
entries are where the homonyms are: ``হয়`` -> ``অশ্ব``, ``বন্ধ`` -> ``হরতাল``)."""
MIN_COUNT = 20
"""Times each word of a synonym must occur in the training knowledge base (``মৃগয়া`` for
``শিকার``, ``অর্ণবপোত`` for ``জাহাজ`` do not)."""
MIN_CHARS = 3
"""Shortest headword and synonym, in characters (``যে``, ``চার`` are function words or
homonyms)."""
NUMBER_WORDS = ("এক", "দুই", "দু", "তিন", "চার", "পাঁচ", "ছয়", "সাত", "আট", "নয়", "দশ", "শত", "হাজার")
"""A headword that begins with a number word is never replaced (the dictionary gives a count
word for it: ``পাঁচজন`` -> ``লোকজন``), nor is a word replaced by a synonym holding one (``মিনিট``
next to ``এক`` became ``এক এক ঘণ্টার``): a question's number is often what it asks about."""
PARTS_OF_SPEECH = ("বিশেষ্য", "বিশেষণ")
"""Noun and adjective: verbs inflect, and their dictionary form is not the form in a question."""

_BANGLA_WORDS = regex.compile(r"^[\u0980-\u09FF]+(?: [\u0980-\u09FF]+)?$")
BANGLA_WORD = regex.compile(r"[\u0980-\u09FF]+")
"""A Bangla word: a run of the Bengali block (letters, vowel signs, digits)."""


def dictionary_path() -> Path:
    """The ``shobdo`` package's SQLite dictionary.

    Raises:
        KBQAError: ``shobdo`` is not installed (it comes with the ``finetune`` extra).
    """
    try:
        path = Path(str(resources.files("shobdo") / "data" / "dictionary.db"))
    except ImportError:  # not installed, or a broken install
        raise KBQAError(
            "the synonym paraphrase rule needs the Bangla dictionary of the `shobdo` package: "
            "pip install 'kbqa[finetune]' (or pip install shobdo)"
        ) from None
    if not path.is_file():
        raise KBQAError(f"the shobdo package has no dictionary at {path}; reinstall shobdo")
    return path


def word_counts(texts: Iterable[str]) -> Counter[str]:
    """Occurrences of each Bangla word (a run of Bangla script) in ``texts``.

    Raises:
        TypeError: ``texts`` is one string (its letters would be counted), or holds a non-string.
    """
    if isinstance(texts, str):
        raise TypeError("word_counts takes an iterable of texts, not one string")
    counts: Counter[str] = Counter()
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"word_counts: a text is {type(text).__name__}, not a string")
        counts.update(BANGLA_WORD.findall(text))
    return counts


def synonym_table(
    counts: Mapping[str, int], path: Path | None = None, names: Iterable[str] = ()
) -> dict[str, list[str]]:
    """``headword -> synonyms`` kept by the module's filters, from the first meaning of each
    entry of the dictionary at ``path`` (default :func:`dictionary_path`).

    Args:
        counts: Word occurrences in the training knowledge base (:func:`word_counts`).
        path: A SQLite file with a ``words`` table of ``word``, ``part_of_speech`` and
            ``meanings`` (a JSON list of strings), as ``shobdo`` ships it.
        names: Words of names, never replaced (Bangla has no capitals: ``সালাম`` of *Abdus
            Salam* is also *greeting*; :func:`kbqa.finetune.traps.name_lexicon` of the
            training answers).

    Raises:
        KBQAError: The dictionary is missing or is not such a file.
    """
    left_alone = {w for w, _ in Counter(counts).most_common(COMMON_WORDS)} | set(names)
    db = Path(path or dictionary_path())
    if not db.is_file():
        raise KBQAError(f"{db} is not a dictionary of the shobdo package: no such file")
    try:  # a file: URI, so a path holding ?, # or % is read as a path, read-only
        with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT word, part_of_speech, meanings FROM words").fetchall()
    except sqlite3.Error as exc:
        raise KBQAError(f"{db} is not a dictionary of the shobdo package: {exc}") from None
    table: dict[str, list[str]] = {}
    for word, pos, meanings in rows:
        if not isinstance(word, str) or pos not in PARTS_OF_SPEECH or word in left_alone:
            continue  # a row without a word is skipped, as a verb is
        if len(word) < MIN_CHARS or word.startswith(NUMBER_WORDS):
            continue
        first = _first_meaning(meanings)
        found = [s.strip() for s in regex.split(r"[;,]", first.split("।")[0])]
        kept = [
            s
            for s in found
            if s != word
            and len(s) >= MIN_CHARS
            and _BANGLA_WORDS.match(s)
            and all(counts.get(w, 0) >= MIN_COUNT for w in s.split())
            and not any(w.startswith(NUMBER_WORDS) for w in s.split())
        ]
        if kept:
            table[word] = list(dict.fromkeys(kept))
    return table


def _first_meaning(meanings: object) -> str:
    try:
        parsed = json.loads(meanings) if isinstance(meanings, str) else None
    except ValueError:
        return ""
    return parsed[0] if isinstance(parsed, list) and parsed and isinstance(parsed[0], str) else ""
