"""Snapshot tests of the rendered reader prompts (regenerate with KBQA_UPDATE_SNAPSHOTS=1)."""

import os
from pathlib import Path

import pytest

from kbqa.prompts import ABSTENTION_PHRASE, Passage, render_answer_prompt

SNAPSHOTS = Path(__file__).parent / "snapshots"
PASSAGES = [Passage("ঢাকা", "ঢাকা বাংলাদেশের রাজধানী।"), Passage("", "Untitled passage.")]


@pytest.mark.parametrize(
    ("style", "language", "qtype"),
    [("completion", "bn", "location"), ("completion", "en", "yes/no"), ("chatml", "bn", "yes/no")],
)
def test_rendered_prompt_snapshot(style: str, language: str, qtype: str) -> None:
    messages = render_answer_prompt(
        "বাংলাদেশের রাজধানী কোথায়?", PASSAGES, style=style, question_type=qtype, language=language
    )
    rendered = "\n---\n".join(f"[{m.type}]\n{m.content}" for m in messages)
    path = SNAPSHOTS / f"prompt-{style}-{language}-{qtype.replace('/', '')}.txt"
    if os.environ.get("KBQA_UPDATE_SNAPSHOTS") == "1":
        path.write_text(rendered, encoding="utf-8")
    assert rendered == path.read_text(encoding="utf-8")


def test_prompt_names_the_abstention_phrase() -> None:
    (message,) = render_answer_prompt("q?", PASSAGES)
    assert ABSTENTION_PHRASE in str(message.content)
    assert str(message.content).endswith("Question: q?\nAnswer:")
