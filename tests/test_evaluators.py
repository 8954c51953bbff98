"""Evaluators and the run summary against hand-computed values."""

import pytest

from kbqa.evals.evaluators import (
    abstention_evaluator,
    answer_in_context_evaluator,
    answer_recall_evaluator,
    contained_evaluator,
    exact_match_evaluator,
    expected_route,
    recall_evaluator,
    score_all,
    token_f1_evaluator,
    trajectory_evaluator,
)
from kbqa.evals.metrics import answer_contained
from kbqa.evals.summary import after_each_stage, stage_changes, summarize

DIRECT = ["classify", "retrieve", "generate", "check_abstention", "finalize"]
RETRIED = ["classify", "retrieve", "generate", "check_abstention", "retry", "generate",
           "check_abstention", "finalize"]  # fmt: skip


def out(answer: str, abstained: bool = False, **extra: object) -> dict[str, object]:
    return {"answer": answer, "abstained": abstained, **extra}


def ref(*answers: str, doc_id: str | None = "d1") -> dict[str, object]:
    return {"answers": list(answers), "doc_id": doc_id, "answerable": bool(answers)}


@pytest.mark.parametrize(
    ("answer", "golds", "em", "f1"),
    [
        ("১৯৭১ সালে", ("1971 সালে",), 1.0, 1.0),  # Bangla digits = ASCII digits
        ("ঢাকা।", ("ঢাকা",), 1.0, 1.0),  # danda is punctuation
        ("ঢাকা শহর", ("চট্টগ্রাম", "ঢাকা"), 0.0, pytest.approx(2 / 3)),  # best of golds: P=1/2 R=1
        ("হ্যাঁ", ("হ্যাঁ",), 1.0, 1.0),
        ("না", ("হ্যাঁ",), 0.0, 0.0),
        ("", ("ঢাকা",), 0.0, 0.0),  # empty answer to an answerable question
        ("the Louvre", ("Louvre",), 1.0, 1.0),  # SQuAD drops articles
    ],
)
def test_em_and_f1(answer: str, golds: tuple[str, ...], em: float, f1: float) -> None:
    assert exact_match_evaluator(out(answer), ref(*golds)) == {"key": "exact_match", "score": em}
    assert token_f1_evaluator(out(answer), ref(*golds))["score"] == f1


def test_unanswerable_scores_one_only_when_abstained() -> None:
    assert exact_match_evaluator(out("Context-এ তথ্য নেই", True), ref())["score"] == 1.0
    assert token_f1_evaluator(out("ঢাকা"), ref())["score"] == 0.0
    # abstaining on an answerable question scores 0 even if the phrase overlaps the gold
    assert token_f1_evaluator(out("তথ্য নেই", True), ref("তথ্য নেই"))["score"] == 0.0


def test_answer_contained() -> None:
    assert answer_contained("It is in Dhaka city.", "Dhaka") == 1.0
    assert answer_contained("Dhakaiya", "Dhaka") == 0.0  # whole tokens only
    assert answer_contained("", "Dhaka") == 0.0
    assert answer_contained("১৯৭১ সালের মার্চে", "1971") == 1.0
    assert contained_evaluator(out("রাজধানী ঢাকা।"), ref("ঢাকা"))["score"] == 1.0


def test_abstention_correctness() -> None:
    assert abstention_evaluator(out("x", True), ref())["score"] == 1.0
    assert abstention_evaluator(out("x", False), ref())["score"] == 0.0
    assert abstention_evaluator(out("x", False), ref("x"))["score"] == 1.0
    assert abstention_evaluator(out("x", True), ref("x"))["score"] == 0.0


def test_recall_counts_distinct_documents() -> None:
    o = out("x", retrieved_doc_ids=["d2", "d2", "d3", "d1"])
    res = {r["key"]: r["score"] for r in recall_evaluator(o, ref("x"))["results"]}
    assert res == {"recall@1": 0.0, "recall@3": 1.0, "recall@5": 1.0, "recall@10": 1.0}
    none = recall_evaluator(o, ref("x", doc_id=None))["results"]
    assert all(r["score"] is None for r in none)
    assert all(r["score"] is None for r in recall_evaluator(o, ref())["results"])


def test_answer_recall_at_k() -> None:
    o = out("x", retrieved_texts=["nothing here", "still nothing", "the answer is Dhaka", "x"])
    res = {r["key"]: r["score"] for r in answer_recall_evaluator(o, ref("dhaka"))["results"]}
    assert res == {
        "answer_recall@1": 0.0,
        "answer_recall@3": 1.0,
        "answer_recall@5": 1.0,
        "answer_recall@10": 1.0,
    }
    assert all(r["score"] is None for r in answer_recall_evaluator(o, ref())["results"])
    assert all(r["score"] is None for r in answer_recall_evaluator(out("x"), ref("x"))["results"])


def test_answer_in_context() -> None:
    o = out("x", context_text="রাজধানী ঢাকা। এটি বড় শহর")
    assert answer_in_context_evaluator(o, ref("ঢাকা"))["score"] == 1.0
    assert answer_in_context_evaluator(o, ref("খুলনা"))["score"] == 0.0
    assert answer_in_context_evaluator(o, ref())["score"] is None


def test_trajectory() -> None:
    traj = trajectory_evaluator(max_retries=1)
    assert expected_route(ref()) == RETRIED
    assert traj(out("x", route=DIRECT), ref("x"))["score"] == 1.0
    assert traj(out("x", route=RETRIED), ref("x"))["score"] == 0.0
    assert traj(out("x", True, route=RETRIED), ref())["score"] == 1.0
    assert traj(out("x", route=DIRECT), {**ref("x"), "route": RETRIED})["score"] == 0.0
    assert expected_route(ref(), max_retries=0) == DIRECT


def test_an_answered_question_passes_the_cross_check_and_the_verifier() -> None:
    answered = expected_route(ref("x"), cross_check=True, verify=True)
    assert answered == [*DIRECT[:-1], "cross_check", "verify", "finalize"]
    traj = trajectory_evaluator(cross_check=True)
    route = [*DIRECT[:-1], "cross_check", "cross_check: agrees", "finalize"]
    assert traj(out("x", route=route), ref("x"))["score"] == 1.0
    assert traj(out("x", route=DIRECT), ref("x"))["score"] == 0.0
    # an unanswerable question reaches the cross-check after its retries, and keeps abstaining
    assert expected_route(ref(), cross_check=True, web_search=True) == [
        *DIRECT[:4], "retry", "generate", "check_abstention", "cross_check", "web_search",
        "finalize",
    ]  # fmt: skip
    assert "cross_check" not in expected_route(ref())


def test_score_all_skips_not_applicable() -> None:
    scores = score_all(out("", True, route=RETRIED, retrieved_doc_ids=["d1"]), ref())
    assert scores["exact_match"] == 1.0 and scores["trajectory"] == 1.0
    assert "recall@1" not in scores and "answer_in_context" not in scores


def record(gold: list[str], stages: list[tuple[str, str, bool]], **extra: object) -> dict:
    final = stages[-1]
    return {
        "gold": gold,
        "answerable": bool(gold),
        "answer": final[1],
        "abstained": final[2],
        "answered_by": final[0],
        "stage_answers": [{"stage": s, "answer": a, "abstained": ab} for s, a, ab in stages],
        "seconds": 1.0,
        "timings": [{"node": "generate", "seconds": 0.5}],
        **extra,
    }


def test_stage_changes_count_raises_and_drops() -> None:
    records = [
        # retry turned an abstention into the right answer: F1 0 -> 1
        record(["ঢাকা"], [("generate", "তথ্য নেই", True), ("retry", "ঢাকা", False)]),
        # retry kept abstaining: no change
        record([], [("generate", "তথ্য নেই", True), ("retry", "তথ্য নেই", True)]),
        # (future verify stage) changed a right answer into a wrong one
        record(["ঢাকা"], [("generate", "ঢাকা", False), ("verify", "খুলনা", False)]),
        record(["ঢাকা"], [("generate", "ঢাকা", False)]),
    ]
    changes = stage_changes(records)
    assert changes["retry"] == {"seen": 2, "changed": 1, "raised": 1, "lowered": 0, "same_f1": 0}
    assert changes["verify"] == {"seen": 1, "changed": 1, "raised": 0, "lowered": 1, "same_f1": 0}


def test_summarize_hand_computed() -> None:
    recs = [
        record(["ঢাকা"], [("generate", "ঢাকা", False)], qtype="factoid", language="bn",
               question_type="location",
               scores={"exact_match": 1.0, "token_f1": 1.0, "recall@1": 1.0, "recall@3": 1.0,
                       "answer_in_context": 1.0}),
        record(["ঢাকা"], [("generate", "ঢাকা শহর", False)], qtype="factoid", language="bn",
               question_type="location",
               scores={"exact_match": 0.0, "token_f1": 2 / 3, "recall@1": 0.0, "recall@3": 1.0,
                       "answer_in_context": 0.0}),
        record([], [("generate", "x", True), ("retry", "x", True)], qtype=None, language="en",
               question_type="other", scores={"exact_match": 1.0, "token_f1": 1.0}),
    ]  # fmt: skip
    s = summarize(recs)
    assert s["questions"] == 3 and s["answerable"] == 2
    assert s["exact_match"] == pytest.approx(0.6667, abs=1e-4)
    assert s["token_f1_answerable"] == pytest.approx(0.8333, abs=1e-4)
    assert s["recall@1"] == 0.5 and s["recall@3"] == 1.0 and s["answer_in_context"] == 0.5
    assert s["abstention_rate_answerable"] == 0.0 and s["abstention_rate_unanswerable"] == 1.0
    assert s["answered_by"] == {"generate": 2, "retry": 1}
    assert s["by_question_type"]["location"] == {
        "n": 2,
        "exact_match": 0.5,
        "token_f1": pytest.approx(0.8333, abs=1e-4),
    }
    assert s["by_language"]["en"]["n"] == 1
    assert s["node_seconds_median"] == {"generate": 0.5}


def test_after_each_stage_is_the_graph_stopped_there() -> None:
    retried = record(["ঢাকা"], [("generate", "তথ্য নেই", True), ("retry", "ঢাকা", False),
                                ("cross_check", "ঢাকা শহর", False)])  # fmt: skip
    retried["timings"] = [{"node": "retrieve", "seconds": 0.5}, {"node": "generate", "seconds": 2},
                          {"node": "retry", "seconds": 0}, {"node": "generate", "seconds": 8},
                          {"node": "cross_check", "seconds": 0.25},
                          {"node": "finalize", "seconds": 0.25}]  # fmt: skip
    # an unanswerable question the fallback answers: right until the fallback, wrong after
    fell = record([], [("generate", "তথ্য নেই", True), ("cross_check", "তথ্য নেই", True),
                       ("fallback", "খুলনা", False)])  # fmt: skip
    fell["timings"] = [{"node": "generate", "seconds": 1}, {"node": "fallback", "seconds": 4}]
    rows = {row["after"]: row for row in after_each_stage([retried, fell])}
    assert list(rows) == ["generate", "retry", "cross_check", "fallback"]
    assert rows["generate"]["token_f1_answerable"] == 0.0
    assert rows["generate"]["abstention_rate_unanswerable"] == 1.0
    assert rows["generate"]["token_f1"] == 0.5
    assert rows["retry"]["exact_match_answerable"] == 1.0
    assert rows["cross_check"]["token_f1_answerable"] == pytest.approx(2 / 3, abs=1e-4)
    assert rows["fallback"]["abstention_rate_unanswerable"] == 0.0
    assert rows["fallback"]["token_f1"] == pytest.approx(1 / 3, abs=1e-4)
    # time: reader 2.75 s (retrieve, generate, finalize), + retry 8 s, + cross-check 0.25 s
    assert [rows[s]["seconds_p95"] for s in rows] == [2.75, 10.75, 11.0, 11.0]
    assert rows["fallback"]["seconds_median"] == pytest.approx((11.0 + 5.0) / 2)


def test_answer_in_context_counts_every_span_and_skips_yes_no() -> None:
    """A multi-span gold (BanglaRQA joins its spans with ';') is in the context when every span
    is, whatever lies between them; a yes/no gold is no span of any passage (None)."""
    o = out("", context_text="ঢাকায় আছে ভবন, প্রাসাদ এবং বহু মন্দির।")
    assert answer_in_context_evaluator(o, ref("ভবন; প্রাসাদ; মন্দির"))["score"] == 1.0
    assert answer_in_context_evaluator(o, ref("ভবন;প্রাসাদ; মসজিদ"))["score"] == 0.0
    assert answer_in_context_evaluator(o, ref("হ্যাঁ"))["score"] is None
    assert (
        answer_in_context_evaluator(out("", context_text="Yes, it is."), ref("Yes"))["score"]
        is None
    )
    # one alternative that is a span is enough
    assert answer_in_context_evaluator(o, ref("না", "প্রাসাদ"))["score"] == 1.0
