"""Follow-up rewriting (:mod:`kbqa.answers.followup`) on 44 written two-turn conversations,
Bangla and English: each with the thread's last turn (question, answer, type, the page the
answer came from) and the words a right standalone question must hold (``A|B``: either). Prints
every rewrite, the share that is right on each set, and whether the rewrite keeps the
follow-up's question type; asserts nothing.

    python benchmarks/followup_rewrite.py

``CASES`` (20) is the development set the rules were tuned on. ``HELD_OUT`` (24) was written
for issue 36 after the topic rule (:func:`~kbqa.answers.followup.topic`) was designed on the
issue's one example, and was not used to change it: the last answer read from a page about
something else, demonstratives, and "when"/"where" follow-ups whose type must survive.
"""

from __future__ import annotations

from kbqa.answers.followup import LastTurn, standalone_question
from kbqa.answers.language import detect_language, question_type

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
     "এটি কত মাস স্থায়ী ছিল?", ("বাংলাদেশের স্বাধীনতা যুদ্ধ|মুক্তিযুদ্ধ",)),
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


HELD_OUT: list[tuple[LastTurn, str, tuple[str, ...]]] = [
    (LastTurn("আহসান মঞ্জিল কোন নদীর তীরে অবস্থিত?", "বুড়িগঙ্গা", "location",
              "বাংলাদেশের পর্যটন"), "এটি কবে প্রতিষ্ঠিত হয়?", ("আহসান মঞ্জিল",)),
    (LastTurn("লালবাগ কেল্লা কে নির্মাণ শুরু করেন?", "মুহাম্মদ আজম শাহ", "person",
              "ঢাকার স্থাপত্য"), "এটি কোথায় অবস্থিত?", ("লালবাগ কেল্লা",)),
    (LastTurn("সোনারগাঁও কোন জেলায় অবস্থিত?", "নারায়ণগঞ্জ", "location", "বাংলার ইতিহাস"),
     "এর পুরনো নাম কী ছিল?", ("সোনারগাঁওয়ের|সোনারগাঁওর",)),
    (LastTurn("কর্ণফুলী নদী কোন শহরের পাশ দিয়ে বয়ে গেছে?", "চট্টগ্রাম", "location",
              "বাংলাদেশের নদী"), "এটির দৈর্ঘ্য কত?", ("কর্ণফুলী নদী",)),
    (LastTurn("বাংলা একাডেমি কবে প্রতিষ্ঠিত হয়?", "১৯৫৫", "date", "ভাষা আন্দোলন"),
     "এটি কোথায় অবস্থিত?", ("বাংলা একাডেমি",)),
    (LastTurn("পদ্মা সেতুর দৈর্ঘ্য কত?", "৬.১৫ কিলোমিটার", "number", "বাংলাদেশের সেতু"),
     "এটি কবে উদ্বোধন করা হয়?", ("পদ্মা সেতু",)),
    (LastTurn("শহীদ মিনার কোথায় অবস্থিত?", "ঢাকা", "location", "ভাষা আন্দোলন"),
     "এটি কে নকশা করেন?", ("শহীদ মিনার",)),
    (LastTurn("কাজী নজরুল ইসলাম কোথায় জন্মগ্রহণ করেন?", "চুরুলিয়া", "location",
              "বাংলা সাহিত্য"), "তিনি কবে মারা যান?", ("কাজী নজরুল ইসলাম",)),
    (LastTurn("বেগম রোকেয়া কোন জেলায় জন্মগ্রহণ করেন?", "রংপুর", "location", "নারী শিক্ষা"),
     "তাঁর লেখা প্রথম বই কোনটি?", ("বেগম রোকেয়ার",)),
    (LastTurn("ষাট গম্বুজ মসজিদ কে নির্মাণ করেন?", "খান জাহান আলী", "person",
              "বাগেরহাট জেলা"), "তিনি কোথায় সমাহিত?", ("খান জাহান আলী",)),
    (LastTurn("কক্সবাজার সমুদ্র সৈকতের দৈর্ঘ্য কত?", "১২০ কিলোমিটার", "number",
              "বাংলাদেশের পর্যটন"), "সেখানে কিভাবে যাওয়া যায়?", ("কক্সবাজার সমুদ্র সৈকত",)),
    (LastTurn("মহাস্থানগড় কোন জেলায়?", "বগুড়া", "location", "প্রাচীন বাংলা"),
     "আর এই জেলার আয়তন কত?", ("বগুড়া",)),
    (LastTurn("Which river flows past the Louvre?", "the Seine", "location", "Paris"),
     "When was it built?", ("Louvre",)),
    (LastTurn("Who designed the Sydney Opera House?", "Jørn Utzon", "person",
              "Modern architecture"), "When did it open?", ("Sydney Opera House",)),
    (LastTurn("Which city hosts the Brandenburg Gate?", "Berlin", "location",
              "Tourism in Germany"), "Who commissioned it?", ("Brandenburg Gate",)),
    (LastTurn("How long is the Great Wall of China?", "21,196 km", "number",
              "List of megastructures"), "When was it begun?", ("Great Wall of China",)),
    (LastTurn("Who painted the Mona Lisa?", "Leonardo da Vinci", "person", "Renaissance"),
     "Where was he born?", ("Leonardo da Vinci",)),
    (LastTurn("Where did Nikola Tesla work in New York?", "Edison Machine Works", "location",
              "History of electricity"), "When did he die?", ("Nikola Tesla",)),
    (LastTurn("What language is spoken in Bangladesh?", "Bangla", "other", "Languages of Asia"),
     "What is its capital?", ("Bangladesh",)),
    (LastTurn("When was Carnegie Mellon University founded?", "1900", "date",
              "Universities in Pennsylvania"), "Where is it located?",
     ("Carnegie Mellon University",)),
    (LastTurn("Who founded the Language Technologies Institute?", "Jaime Carbonell", "person",
              "Language Technologies Institute"), "When was it founded?",
     ("Language Technologies Institute",)),
    (LastTurn("Which country is Mount Kilimanjaro in?", "Tanzania", "location",
              "Volcanoes of Africa"), "How high is this mountain?", ("Mount Kilimanjaro",)),
    (LastTurn("What is the Amazon River's length?", "6,400 km", "number",
              "Rivers of South America"), "Which ocean does it flow into?", ("Amazon River",)),
    (LastTurn("Who wrote Pather Panchali?", "Bibhutibhushan Bandyopadhyay", "person",
              "Bengali literature"), "When was it filmed?", ("Pather Panchali",)),
]  # fmt: skip


def score(cases: list[tuple[LastTurn, str, tuple[str, ...]]], name: str) -> None:
    right = kept = 0
    for last, followup, needed in cases:
        language = detect_language(followup)
        out = standalone_question(followup, language, last)
        ok = out != followup and all(any(a in out for a in n.split("|")) for n in needed)
        same_type = (
            question_type(out) == question_type(followup) or question_type(followup) == "other"
        )
        right += ok
        kept += same_type
        print(f"{'ok ' if ok else 'BAD'} {followup!r} -> {out!r}"
              + ("" if same_type else f"  (type {question_type(followup)} -> "
                 f"{question_type(out)})"))  # fmt: skip
    print(f"{name}: right {right} of {len(cases)} ({right / len(cases):.0%}); "
          f"question type kept {kept} of {len(cases)}\n")  # fmt: skip


def main() -> None:
    score(CASES, "development (20)")
    score(HELD_OUT, f"held out ({len(HELD_OUT)})")


if __name__ == "__main__":
    main()
