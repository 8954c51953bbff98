"""The same question with the same settings gets the same answer whatever was asked before it
(issue 34 item 7): the reader evaluates every prompt whole instead of reusing the key-value
cache of the prefix it shares with the last prompt, whose logits differ by batch rounding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import data_dir

from kbqa.prompts import ANSWER_STOP

pytest.importorskip("llama_cpp")


def test_each_prompt_is_evaluated_from_its_first_token(tmp_path: Path) -> None:
    from langchain_core.messages import HumanMessage
    from tiny_gemma import tiny_gemma_gguf

    from kbqa.llm.chat import LlamaCppChatModel
    from kbqa.llm.models import resolve_model

    path = tiny_gemma_gguf(resolve_model("gemma3-270m")[0], tmp_path / "tiny.gguf")
    model = LlamaCppChatModel.from_path(path, model_name="tiny", prompt_style="completion",
                                        n_ctx=512, n_threads=1)  # fmt: skip
    starts: list[int] = []
    real_eval = model._llama.eval

    def recording_eval(tokens: Any) -> None:
        starts.append(model._llama.n_tokens)
        real_eval(tokens)

    model._llama.eval = recording_eval
    shared = "Context:\n[1] ঢাকা বাংলাদেশের রাজধানী। এটি বুড়িগঙ্গা নদীর তীরে অবস্থিত।\nQuestion: "
    prompts = [shared + q + "\nAnswer:" for q in ("ঢাকা কোথায়?", "নদীর নাম কী?", "ঢাকা কোথায়?")]
    replies = [model.invoke([HumanMessage(p)], stop=list(ANSWER_STOP), max_tokens=4).content
               for p in prompts]  # fmt: skip
    first_evals = [i for i, n in enumerate(starts) if n == 0]
    assert len(first_evals) == 3, starts  # every prompt starts at position 0, none reuses
    assert replies[0] == replies[2]


@pytest.mark.integration
@pytest.mark.slow
def test_twenty_questions_in_two_orders_get_the_same_answers(tmp_path: Path) -> None:
    data = data_dir()
    if data is None:
        pytest.skip("real data not found: set KBQA_DATA_DIR or place shared/data beside the repo")
    from kbqa.api import KBQA
    from kbqa.corpus.loaders import load_documents
    from kbqa.embedders import load_embedder
    from kbqa.evals.datasets import load_questions, select
    from kbqa.index import build_index

    index = tmp_path / "xquad"
    build_index(load_documents(data / "en" / "xquad" / "kb.jsonl"), index, load_embedder("none"),
                progress=False)  # fmt: skip
    questions = [q.question for q in select(load_questions(data / "en" / "xquad" / "qa.jsonl"),
                                            sample=20, seed=3)]  # fmt: skip
    kbqa = KBQA.from_index(index, web_search="off")
    forward = {q: kbqa.ask(q).answer for q in questions}
    backward = {q: kbqa.ask(q).answer for q in reversed(questions)}
    differ = {q: (forward[q], backward[q]) for q in questions if forward[q] != backward[q]}
    assert not differ, differ
