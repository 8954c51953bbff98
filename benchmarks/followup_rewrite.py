"""Follow-up rewriting (:mod:`kbqa.answers.followup`) on 20 written follow-ups, 10 Bangla and 10
English: each with the thread's last turn (question, answer, type, the page the answer came
from) and the words a right standalone question must hold. Prints every rewrite and the share
that is right; asserts nothing.

    python benchmarks/followup_rewrite.py

The cases were written for this benchmark, before the rules were tuned on them: the figure is
the rule's accuracy on its own development set.
"""

from __future__ import annotations

from kbqa.answers.followup import LastTurn, standalone_question
from kbqa.answers.language import detect_language

CASES: list[tuple[LastTurn, str, tuple[str, ...]]] = [
    (LastTurn("গীতাঞ্জলি কে লিখেছেন?", "রবীন্দ্রনাথ ঠাকুর", "person", "গীতাঞ্জলি"),
     "আর তিনি কবে জন্মেছিলেন?", ("রবীন্দ্রনাথ ঠাকুর",)),
    (LastTurn("রবীন্দ্রনাথ ঠাকুর কোথায় জন্মগ্রহণ করেন?", "কলকাতায়", "location",
              "রবীন্দ্রনাথ ঠাকুর"), "তিনি কবে নোবেল পুরস্কার পান?", ("রবীন্দ্রনাথ ঠাকুর",)),
    (LastTurn("বাংলাদেশের রাজধানী কোথায়?", "ঢাকা", "location", "ঢাকা"),
     "এটি কোন নদীর তীরে অবস্থিত?", ("ঢাকা",)),
    (LastTurn("পদ্মা নদী কোন দেশে প্রবাহিত?", "বাংলাদেশ", "location", "পদ্মা নদী"),
     "এর দৈর্ঘ্য কত?", ("পদ্মা নদীর",)),
    (LastTurn("বঙ্গবন্ধু শেখ মুজিবুর রহমান কোথায় জন্মগ্রহণ করেন?", "টুঙ্গিপাড়া", "location",
              "শেখ মুজিবুর রহমান"), "তাঁর পিতার নাম কী?", ("শেখ মুজিবুর রহমানের",)),
    (LastTurn("জাতীয় কবি কে?", "কাজী নজরুল ইসলাম", "person", "কাজী নজরুল ইসলাম"),
     "তাঁর প্রথম কাব্যগ্রন্থের নাম কী?", ("কাজী নজরুল ইসলামের",)),
    (LastTurn("সুন্দরবন কোথায় অবস্থিত?", "খুলনা", "location", "সুন্দরবন"),
     "সেখানে কোন বাঘ পাওয়া যায়?", ("খুলনা",)),
    (LastTurn("ঢাকা বিশ্ববিদ্যালয় কবে প্রতিষ্ঠিত হয়?", "১৯২১", "date", "ঢাকা বিশ্ববিদ্যালয়"),
     "আর এটির প্রথম উপাচার্য কে ছিলেন?", ("ঢাকা বিশ্ববিদ্যালয়",)),
    (LastTurn("মুক্তিযুদ্ধ কত সালে হয়?", "১৯৭১", "date", "বাংলাদেশের স্বাধীনতা যুদ্ধ"),
     "এটি কত মাস স্থায়ী ছিল?", ("বাংলাদেশের স্বাধীনতা যুদ্ধ",)),
    (LastTurn("সত্যজিৎ রায়ের প্রথম চলচ্চিত্র কোনটি?", "পথের পাঁচালী", "other", "সত্যজিৎ রায়"),
     "আর তিনি কোন পুরস্কার পান?", ("সত্যজিৎ রায়",)),
    (LastTurn("Who wrote Gitanjali?", "Rabindranath Tagore", "person", "Gitanjali"),
     "And when was he born?", ("Rabindranath Tagore",)),
    (LastTurn("When was the Eiffel Tower built?", "1889", "date", "Eiffel Tower"),
     "How tall is it?", ("Eiffel Tower",)),
    (LastTurn("What is the capital of France?", "Paris", "location", "Paris"),
     "Which river flows through it?", ("Paris",)),
    (LastTurn("Who discovered penicillin?", "Alexander Fleming", "person", "Penicillin"),
     "Where did he study?", ("Alexander Fleming",)),
    (LastTurn("Where was Marie Curie born?", "Warsaw", "location", "Marie Curie"),
     "What did she win in 1903?", ("Marie Curie",)),
    (LastTurn("Who founded Carnegie Mellon University?", "Andrew Carnegie", "person",
              "Carnegie Mellon University"), "What was his profession?", ("Andrew Carnegie's",)),
    (LastTurn("Where is the Language Technologies Institute?", "Pittsburgh", "location",
              "Language Technologies Institute"), "What is the weather like there?",
     ("Pittsburgh",)),
    (LastTurn("When did the Normans conquer England?", "1066", "date", "Normans"),
     "Who was their leader?", ("Normans'",)),
    (LastTurn("What is the Amazon rainforest?", "a tropical rainforest", "other",
              "Amazon rainforest"), "What is its area?", ("Amazon rainforest's",)),
    (LastTurn("Who was the first president of the United States?", "George Washington",
              "person", "President of the United States"), "And what about his wife?",
     ("George Washington's",)),
]  # fmt: skip


def main() -> None:
    right = 0
    for last, followup, needed in CASES:
        out = standalone_question(followup, detect_language(followup), last)
        ok = all(n in out for n in needed) and out != followup
        right += ok
        print(f"{'ok ' if ok else 'BAD'} {followup!r} -> {out!r}")
    print(f"right: {right} of {len(CASES)} ({right / len(CASES):.0%})")


if __name__ == "__main__":
    main()
