"""benchmarks/reading_window.py: the reading-time question forms it tries (``--question-forms``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import reading_window


@pytest.mark.parametrize(
    ("form", "question", "expected"),
    [
        ("order", "কে প্লেটোর গুরু?", "প্লেটোর গুরু কে?"),
        ("order", "তাজউদ্দীন আহমদের জন্ম কোথায়?", "কোথায় তাজউদ্দীন আহমদের জন্ম?"),
        ("question word first", "ডিনামাইট কে আবিষ্কার করেছিলেন?", "কে ডিনামাইট আবিষ্কার করেছিলেন?"),
        ("standard ki", "প্লেটোর মায়ের নাম কি?", "প্লেটোর মায়ের নাম কী?"),
        ("which noun", "ব্রুনাইয়ের রাজধানী কোন শহর?", "ব্রুনাইয়ের রাজধানী কী?"),
    ],
)
def test_a_form_rewrites_the_question_it_fits(form: str, question: str, expected: str) -> None:
    assert reading_window.FORMS[form](question) == expected


@pytest.mark.parametrize(
    ("form", "question"),
    [
        ("standard ki", "এরিস্টটল কি প্লেটোর ছাত্র ছিলেন?"),  # the yes/no particle stays
        ("standard ki", "কিশোরগঞ্জ কোথায়?"),  # কি inside a word is not the word কি
        ("question word first", "কে প্লেটোর গুরু?"),  # already first
        ("question word first", "প্লেটোর গুরু কে?"),  # last: the order form's case
        ("which noun", "ডিনামাইট কে আবিষ্কার করেছিলেন?"),
        ("order", "ডিনামাইট কে আবিষ্কার করেছিলেন?"),  # a question word inside does not move
    ],
)
def test_a_form_leaves_a_question_it_does_not_fit(form: str, question: str) -> None:
    assert reading_window.FORMS[form](question) == question
