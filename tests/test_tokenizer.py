import re

import bm25s

from kbqa.retrieval.tokenizer import tokenize, url_tokens


def test_every_bangla_word_survives() -> None:
    sentence = "বাংলাদেশের রাজধানী কোথায়?"
    assert tokenize(sentence) == ["বাংলাদেশের", "রাজধানী", "কোথায়"]


def test_default_pattern_shatters_bangla() -> None:
    # The bug this tokenizer exists for: \b\w\w+\b loses vowel signs.
    assert re.findall(r"(?u)\b\w\w+\b", "বাংলাদেশের রাজধানী কোথায়?") != tokenize("বাংলাদেশের রাজধানী কোথায়?")


def test_danda_punctuation_case_and_digits() -> None:
    assert tokenize("ঢাকা শহর। Hello, WORLD! ১৯৭১") == ["ঢাকা", "শহর", "hello", "world", "1971"]


def test_url_tokens() -> None:
    assert url_tokens("https://eecs.berkeley.edu/people/external-relations/") == [
        "eecs",
        "berkeley",
        "edu",
        "people",
        "external",
        "relations",
    ]
    assert url_tokens("") == []


def test_exact_bangla_query_scores_nonzero_with_bm25s() -> None:
    docs = [
        "ঢাকা বাংলাদেশের রাজধানী।",
        "প্যারিস ফ্রান্সের রাজধানী।",
        "পদ্মা একটি নদী।",
        "রবীন্দ্রনাথ ঠাকুর কবি ছিলেন।",
        "The Nile is a river.",
    ]
    bm25 = bm25s.BM25()
    bm25.index([tokenize(d) for d in docs], show_progress=False)
    scores = bm25.get_scores(tokenize("বাংলাদেশের রাজধানী"))
    assert scores[0] > 0
    assert scores.argmax() == 0
