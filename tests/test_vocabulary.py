"""Issue 35 item 7: one list of yes/no words. Every stage reads each spelling of a yes/no
answer as one (before, the grounding check did not know ``হাঁ`` and the clean-up did not map it,
while the cross-check and the metrics did)."""

from __future__ import annotations

import pytest

from kbqa.answers.cleanup import postprocess
from kbqa.answers.snap import ground_answer
from kbqa.answers.vocabulary import NO_FORMS, YES_FORMS, YES_NO_FORMS
from kbqa.evals.metrics import YES_NO_GOLDS


@pytest.mark.parametrize("form", sorted(YES_NO_FORMS))
def test_every_stage_reads_each_spelling_as_yes_or_no(form: str) -> None:
    yes = form in YES_FORMS
    assert postprocess(form, "yes/no", [], "bn") == ("হ্যাঁ" if yes else "না")
    assert postprocess(form, "yes/no", [], "en") == ("Yes" if yes else "No")
    assert ground_answer(form, ["a passage without the word"]) == form  # needs no passage
    assert form in YES_NO_GOLDS
    assert (form in NO_FORMS) is not yes
