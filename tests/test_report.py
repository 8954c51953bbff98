"""Report helpers and the ablation list."""

from pathlib import Path

from kbqa.context import Context
from kbqa.evals.ablation import ablations, model_tag
from kbqa.evals.plots import abstention_calibration, recall_curve
from kbqa.evals.report import answered_unanswerable, markdown_table, worst_answers, write_report


def rec(answerable: bool, abstained: bool, docs: list[str], aic: float | None = 0.0) -> dict:
    return {
        "answerable": answerable,
        "abstained": abstained,
        "gold_doc_id": "g" if answerable else None,
        "retrieved_doc_ids": docs,
        "scores": {"answer_in_context": aic} if answerable else {},
        "timings": [{"node": "retrieve", "seconds": 0.01}, {"node": "generate", "seconds": 2.0}],
    }


RECORDS = [
    rec(True, False, ["g", "x"], aic=1.0),
    rec(True, True, ["x", "y", "g"], aic=0.0),
    rec(True, False, ["x"], aic=1.0),
    rec(False, True, ["x"]),
    rec(True, True, ["g"], aic=None),  # a yes/no question: no span to find
]


def test_recall_curve() -> None:
    curve = recall_curve(RECORDS, max_k=4)
    assert curve == [2 / 4, 2 / 4, 3 / 4, 3 / 4]


def test_abstention_calibration() -> None:
    cal = abstention_calibration(RECORDS)
    assert cal == {
        "answer in context": (2, 0.0),
        "answer not in context": (1, 1.0),
        "yes/no (no span to find)": (1, 1.0),
        "unanswerable": (1, 1.0),
    }


def test_markdown_table() -> None:
    assert markdown_table(["a", "b"], [[1, 0.12345], ["x", None]]).splitlines() == [
        "| a | b |",
        "|---|---|",
        "| 1 | 0.123 |",
        "| x | n/a |",
    ]


def test_report_has_plots(tmp_path: Path) -> None:
    summary = {"questions": 4, "token_f1": 0.5, "answered_by": {"generate": 4},
               "by_question_type": {"other": {"n": 4, "exact_match": 0.0, "token_f1": 0.5}},
               "answer_in_context": 0.67}  # fmt: skip
    path = write_report(tmp_path, RECORDS, summary)
    text = path.read_text()
    for png in ("f1_by_type", "recall_at_k", "node_latency", "abstention_calibration"):
        assert f"plots/{png}.png" in text
        assert (tmp_path / "plots" / f"{png}.png").stat().st_size > 1000


def test_ablation_list() -> None:
    names = dict(ablations(Context(max_retries=1)))
    assert names["full (bm25 0.65 / dense 0.35 weighted, padding on, 1 retry)"] == {}
    assert names["no dense (BM25 only)"] == {"bm25_weight": 1.0, "dense_weight": 0.0}
    assert names["no BM25 (dense only)"] == {"bm25_weight": 0.0, "dense_weight": 1.0}
    assert "fusion bm25=0.65" not in names  # the default is the full row
    assert names["no retry"] == {"max_retries": 0}
    assert all(Context(**o) for o in names.values())  # every override is a valid Context
    lexical = dict(ablations(Context(), has_dense=False))
    assert "full (bm25, no dense part, padding on, 0 retries)" in lexical  # the default
    assert not any("dense" in n or "fusion" in n or "RRF" in n for n in list(lexical)[1:])
    assert "no retry" not in lexical and "no fallback" not in lexical  # both off already
    # the default's cross-check applies the date rule: a row of its own; without rules it
    # changes nothing, so no row
    assert lexical["no cross check"] == {"cross_check": "off"}
    unruled = dict(ablations(Context(cross_check_rules="none"), has_dense=False))
    assert "no cross check" not in unruled
    # the no-LLM row drops an English reader too (use_llm off refuses one)
    no_llm = dict(ablations(Context(model_en="qwen2.5-coder-1.5b")))["no LLM (pattern extractor)"]
    assert Context(**{"model_en": "qwen2.5-coder-1.5b", **no_llm}).use_llm is False


def test_model_tag() -> None:
    assert model_tag("/models/My Model.gguf") == "My_Model"
    assert model_tag("qwen2.5-coder-1.5b") == "qwen2.5-coder-1.5b"


def qa(
    question: str,
    answer: str,
    f1: float,
    *,
    abstained: bool = False,
    read: list[str] | None = None,
    answerable: bool = True,
    aic: float = 1.0,
) -> dict:
    return {"question": question, "gold": ["gold " + question], "answer": answer,
            "answerable": answerable, "abstained": abstained, "gold_doc_id": "g",
            "answered_by": "generate", "context_doc_ids": read if read is not None else ["g"],
            "scores": {"token_f1": f1, "answer_in_context": aic} if answerable else {}}  # fmt: skip


def test_worst_answers_lists_the_lowest_f1_first_wrong_answers_before_abstentions() -> None:
    records = [
        qa("good", "a", 1.0),
        qa("abst", "ABST", 0.0, abstained=True),
        qa("wrong", "b | c", 0.0, read=["x"], aic=0.0),
        qa("half", "d", 0.5),
        qa("unanswerable", "e", 0.0, answerable=False),
        {"question": "failed", "answerable": True, "scores": {}},
    ]
    rows = worst_answers(records, n=3)
    assert [r[0] for r in rows] == ["wrong", "abst", "half"]
    assert [r[0] for r in worst_answers(records, n=10)] == ["wrong", "abst", "half"]  # not "good"
    assert rows[0] == ["wrong", "gold wrong", "b | c", 0.0, "no", "no", "generate"]
    assert "| b \\| c |" in markdown_table(["q", "g", "a", "f1", "r", "d", "by"], rows)
    assert rows[1][2] == "(abstained)" and rows[1][4:6] == ["yes", "yes"]
    assert answered_unanswerable(records) == [["unanswerable", "e", "generate"]]
    # records of runs made before the context's documents were recorded
    old = qa("old", "f", 0.0)
    del old["context_doc_ids"]
    assert worst_answers([old])[0][5] == "n/a"


def test_worst_answers_survive_malformed_records(tmp_path: Path) -> None:
    odd = [
        {**qa("none f1", "a", 0.0), "scores": {"token_f1": None}},
        {**qa("no scores", "a", 0.0), "scores": None},
        {**qa("int read", "a", 0.2), "context_doc_ids": 5},
        {**qa("str gold", "a", 0.3), "gold": "ঢাকা", "answer": None, "answered_by": "ge|n\nx"},
        {**qa("unknown", "a", 0.0), "answerable": None},
    ]
    rows = worst_answers(odd)
    assert [r[0] for r in rows] == ["unknown", "int read", "str gold"]
    assert rows[1][5] == "n/a" and rows[2][1:3] == ["ঢাকা", ""] and rows[2][6] == "ge|n x"
    assert answered_unanswerable(odd) == []  # answerable None is not "unanswerable"
    table = markdown_table(["q", "g", "a", "f1", "r", "d", "by"], rows).splitlines()
    assert len(table) == 5 and all(line.count(" | ") == 6 for line in table[2:])


def test_report_lists_the_worst_answers_and_no_none_header(tmp_path: Path) -> None:
    records = [qa("wrong", "b", 0.0), qa("unanswerable", "e", 0.0, answerable=False)]
    text = write_report(tmp_path, records, {"questions": 2}, plots=False).read_text()
    assert "## Worst answers" in text and "| wrong | gold wrong | b |" in text
    assert "## Unanswerable questions answered" in text and "| unanswerable | e |" in text
    assert "None" not in text
