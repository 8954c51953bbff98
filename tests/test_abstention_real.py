"""Abstention judgement on real outputs of the embedded models.

Every row is a raw reply a model gave in this project's evaluation runs (BanglaRQA validation
sample, seed 0, and CMU LTI), with the question it answered; greedy decoding, so the runs
reproduce them. Rows marked ``abstain`` must be judged abstentions; the others must survive as
the given answer.
"""

from __future__ import annotations

import pytest

from kbqa.answers.abstention import judge
from kbqa.context import Context
from kbqa.prompts import ABSTENTION_PHRASE

CTX = Context(index_dir="unused")

GEMMA = "gemma3-270m"
QWEN = "qwen2.5-coder-1.5b"

# (model, question, raw reply, expected answer or None for an abstention)
REAL_OUTPUTS = [
    # the fixed phrase, and nothing at all (Gemma's first token was a stop sequence)
    (GEMMA, "এইচ সি আই-এর গবেষকরা কি কি করতে আগ্রহী?", " Context-এ তথ্য নেই", None),
    (GEMMA, "কতো সালে রকমারিতে ক্যাশ অন ডেলিভারি চালু করে?", "", None),
    # the question echoed back, with or without its question mark or a citation marker
    (GEMMA, "অর্ক চুল্লিটি কে আবিষ্কার করেন?", " অর্ক চুল্লিটি কে আবিষ্কার করেন?", None),
    (
        GEMMA,
        "সাইম কাদের অধীনে তড়িৎ প্রকৌশল নিয়ে কাজ করেন?",
        " সাইম কাদের অধীনে তড়িৎ প্রকৌশল নিয়ে কাজ করেন",
        None,
    ),
    (
        GEMMA,
        "প্রথমদিকে নারী বিদ্যার পাঠ এবং পাঠ্যসূচিতে কোন প্রশ্নগুলো মূখ্য ছিল?",
        "[1] প্রথমদিকে নারী বিদ্যার পাঠ এবং পাঠ্যসূচিতে কোন প্রশ্নগুলো মূখ্য ছিল",
        None,
    ),
    (
        GEMMA,
        "When is Independence Day; University Closed & No Classes?",
        " When is Independence Day; University Closed & No Classes?",
        None,
    ),
    # ... behind a list marker
    (
        GEMMA,
        "নতুন অতিনবতারা আবিষ্কৃত হলে তার তথ্য কোথায় প্রেরণ করা হয়?",
        " (১) নতুন অতিনবতারা আবিষ্কৃত হলে তার তথ্য কোথায় প্রেরণ করা হয়?",
        None,
    ),
    # ... or mostly: only the question's words (the first part of the question)
    (
        GEMMA,
        "নুপযু্ক্ত, অকার্যকর অথবা তথ্য উন্মুক্ত নীতির অনিয়ন্ত্রণ কিভাবে গোপনীয়তা সমস্যার প্রধান কারণ হতে পারে?",
        " [1] নুপযু্ক্ত, অকার্যকর অথবা তথ্য উন্মুক্ত নীতির অনিয়ন্ত্রণ [2] নুপযু্ক্ত, অকার্যকর",
        None,
    ),
    # bare list markers carry nothing
    (GEMMA, "হামারকে কারা গ্রেপ্তার করেছিল?", " (1) (2) (3) (4) (5) (6) (7) (8) (9) (10) (", None),
    (GEMMA, "স্ট্যান্ড আপ কমেডি কী?", " (A)", None),
    # answers, including ones that contain abstention-like words
    (
        GEMMA,
        "১১ সদস্যের বিশেষজ্ঞ প্যানেলের সভাপতি নিযুক্ত করা হয় কাকে?",
        " (ক) সৈয়দ রেজাউর রহমান, (খ) গোলাম হাসনাইন, (গ) রানা দাশগুপ্ত, (ঘ) জিয়াদ",
        "সৈয়দ রেজাউর রহমান, (খ) গোলাম হাসনাইন, (গ) রানা দাশগুপ্ত, (ঘ) জিয়াদ",
    ),
    (GEMMA, "সুমেরিয়ান কারা?", " (1) সুমেরিয়ানরা (2) সুমেরিয়ানরা (3) সু", "সুমেরিয়ানরা (2) সুমেরিয়ানরা (3) সু"),
    (
        GEMMA,
        "স্নোডেন এনএসএ সম্পর্কে কোন স্পর্শকাতর তথ্য প্রকাশ করেননি?",
        " স্নোডেন এনএসএ-এর গোপন তথ্য প্রকাশ করেননি",
        "স্নোডেন এনএসএ-এর গোপন তথ্য প্রকাশ করেননি",
    ),
    (
        GEMMA,
        "সেবা.এক্সওয়াইজেড সংস্থার কার্যক্রম শুধুমাত্র ঢাকায় আছে - হ্যাঁ কি না?",
        " yes, but not in the capital city of the country.",
        "yes, but not in the capital city of the country",
    ),
    (
        GEMMA,
        "What is happening on 04/15/2024?",
        " 04/15/2024 is a contradiction because it is not a neutral statement.",
        "04/15/2024 is a contradiction because it is not a neutral statement",
    ),
    # Qwen2.5-Coder-1.5B-Instruct (ChatML): the fixed phrase, or a bare passage number
    (QWEN, "১ম আলফোনসোর সমাধি কোথায়?", "Context-এ তথ্য নেই", None),
    (QWEN, "রাসেলকে কোন দর্শনের অন্যতম প্রতিষ্ঠাতা বিবেচনা করা হয়?", "[3]", None),
    (QWEN, "বাংলাদেশীদের খাবারের কত শতাংশের বেশি আমিষ আসে মাছ থেকে?", "80", "80"),
    (QWEN, "সমতল পৃথিবী বলতে কী বোঝানো হচ্ছে?", "বরং সমতল", "বরং সমতল"),
    (QWEN, "গোদা চিংড়ি কোন পরিবারের অন্তর্ভুক্ত?", "পালামনইডা", "পালামনইডা"),
    (QWEN, "সিনেমাতে ডিজিটাল বিপ্লবের প্রভাব কীরূপ?", "বিংশ শতাব্দীর শেষভাগে", "বিংশ শতাব্দীর শেষভাগে"),
]


@pytest.mark.parametrize(("model", "question", "raw", "expected"), REAL_OUTPUTS)
def test_real_output(model: str, question: str, raw: str, expected: str | None) -> None:
    answer, abstained = judge(raw, question, CTX.abstention_phrase, CTX.max_answer_chars)
    if expected is None:
        assert abstained and answer == ABSTENTION_PHRASE, f"{model}: {raw!r} -> {answer!r}"
    else:
        assert not abstained and answer == expected, f"{model}: {raw!r} -> {answer!r}"
