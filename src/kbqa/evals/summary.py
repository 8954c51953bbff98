"""Aggregate per-question records into the figures a run reports.

Stage attribution follows HybridRAG-BN's reporting: which stage produced each final answer, and
for every later stage how many answers it changed and whether the change raised or lowered
token F1.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import Any

from kbqa.answers.cleanup import drop_year_word, postprocess
from kbqa.evals.evaluators import RECALL_KS
from kbqa.evals.metrics import exact_match, max_over_golds, token_f1

Record = dict[str, Any]


def _mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return round(statistics.fmean(vals), 4) if vals else None


def _median(values: Iterable[float]) -> float | None:
    vals = list(values)
    return round(statistics.median(vals), 4) if vals else None


def _score(rec: Record, key: str) -> float | None:
    scores = rec.get("scores")
    value = scores.get(key) if isinstance(scores, dict) else None
    return None if value is None else float(value)


def _mean_score(records: list[Record], key: str) -> float | None:
    return _mean(v for r in records if (v := _score(r, key)) is not None)


def _split(records: list[Record], key: Callable[[Record], Any]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        groups[str(key(r))].append(r)
    return {
        name: {
            "n": len(rs),
            "exact_match": _mean_score(rs, "exact_match"),
            "token_f1": _mean_score(rs, "token_f1"),
        }
        for name, rs in sorted(groups.items(), key=lambda kv: -len(kv[1]))
    }


def stage_changes(records: list[Record]) -> dict[str, dict[str, int]]:
    """For each stage after the first: answers it changed, and how token F1 moved.

    Returns:
        ``{stage: {"changed", "raised", "lowered", "same_f1"}}``, counted over consecutive
        entries of each record's ``stage_answers``.
    """
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        stages = r.get("stage_answers") or []
        for prev, cur in pairwise(stages):
            out[cur["stage"]]["seen"] += 1
            if (prev["answer"], prev["abstained"]) == (cur["answer"], cur["abstained"]):
                continue
            gold = r.get("gold") or []
            before = max_over_golds(token_f1, prev["answer"], gold, abstained=prev["abstained"])
            after = max_over_golds(token_f1, cur["answer"], gold, abstained=cur["abstained"])
            c = out[cur["stage"]]
            c["changed"] += 1
            c["raised" if after > before else "lowered" if after < before else "same_f1"] += 1
    return {
        stage: {k: c[k] for k in ("seen", "changed", "raised", "lowered", "same_f1")}
        for stage, c in out.items()
    }


STAGE_ORDER = ("generate", "extract", "retry", "cross_check", "verify", "fallback", "web_search")
"""The graph's answering stages in the order they run (kbqa.graph); ``stage_answers`` entries
follow it."""


def p95(values: list[float]) -> float | None:
    """The 95th percentile (nearest rank) of ``values``, rounded to 4 places; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)], 4)


def _stage_of_timings(record: Record) -> list[tuple[str, float]]:
    """Each node run's seconds, charged to the answering stage it belongs to: the nodes before
    the first ``retry`` to ``generate`` (with ``classify``, ``retrieve`` and ``finalize``, which
    every graph runs), the generation a retry starts to ``retry``, and so on."""
    out: list[tuple[str, float]] = []
    stage = "generate"
    for t in record.get("timings", []):
        node = str(t["node"])
        if node in STAGE_ORDER[1:]:
            stage = node
        out.append(("generate" if node == "finalize" else stage, float(t["seconds"])))
    return out


def after_each_stage(records: list[Record]) -> list[dict[str, Any]]:
    """The run as if the graph had stopped after each stage: the answers, scores and time of
    the graph made of the stages up to and including it (HybridRAG-BN's ablation rows, read
    from one run with every stage on instead of one run per row).

    A question's answer after stage S is its last ``stage_answers`` entry of a stage at or
    before S in :data:`STAGE_ORDER`, shaped by ``finalize``'s
    :func:`~kbqa.answers.cleanup.postprocess` and
    :func:`~kbqa.answers.cleanup.drop_year_word`. Its snapping and grounding are not redone
    (records do not hold the passages), so the last row can differ from the run's own scores
    by those few answers. A question's time is the seconds of the nodes charged to those
    stages. Scores are token F1 and EM with the abstention rule of the evaluators (an
    unanswerable question scores 1 when it abstained).

    Returns:
        One row per stage that ran in some record, in graph order: ``{"after", "questions",
        "exact_match_answerable", "token_f1_answerable", "abstention_rate_unanswerable",
        "token_f1", "seconds_median", "seconds_p95"}``; rates in [0, 1], seconds per question.
    """
    ran = {e["stage"] for r in records for e in r.get("stage_answers") or []}
    rows = []
    for stop in (s for s in STAGE_ORDER if s in ran):
        upto = set(STAGE_ORDER[: STAGE_ORDER.index(stop) + 1])
        em_ans, f1_ans, f1_all, abst_unans, secs = [], [], [], [], []
        for r in records:
            seen = [e for e in r.get("stage_answers") or [] if e["stage"] in upto]
            if not seen:
                continue
            answer, abstained = str(seen[-1]["answer"]), bool(seen[-1]["abstained"])
            if not abstained:  # finalize's clean-up (its snapping needs passages not recorded)
                answer = postprocess(answer, r.get("question_type", "other"), [], r.get("language"))
                answer = drop_year_word(answer)
            gold = r.get("gold") or []
            f1 = max_over_golds(token_f1, answer, gold, abstained=abstained)
            f1_all.append(f1)
            if r.get("answerable", bool(gold)):
                f1_ans.append(f1)
                em_ans.append(max_over_golds(exact_match, answer, gold, abstained=abstained))
            else:
                abst_unans.append(float(abstained))
            secs.append(sum(s for stage, s in _stage_of_timings(r) if stage in upto))
        rows.append(
            {
                "after": stop,
                "questions": len(f1_all),
                "exact_match_answerable": _mean(em_ans),
                "token_f1_answerable": _mean(f1_ans),
                "abstention_rate_unanswerable": _mean(abst_unans),
                "token_f1": _mean(f1_all),
                "seconds_median": _median(secs),
                "seconds_p95": p95(secs),
            }
        )
    return rows


def node_seconds(records: list[Record]) -> dict[str, list[float]]:
    """Wall seconds of every node run, by node name (for latency plots)."""
    out: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for t in r.get("timings", []):
            out[t["node"]].append(float(t["seconds"]))
    return dict(out)


def summarize(records: list[Record]) -> dict[str, Any]:
    """Aggregate figures of a run.

    Means of every evaluator over all questions (``exact_match``, ``token_f1``,
    ``answer_contained``, ``abstention_correct``, ``trajectory``), EM/F1 over answerable
    questions, recall@k and answer-in-context (answerable only), abstention rates, splits by
    question type (classifier), dataset qtype, answerability and language, stage attribution, and
    seconds per question (graph wall time) with the median per node.
    """
    ans = [r for r in records if r.get("answerable", True)]
    unans = [r for r in records if not r.get("answerable", True)]
    s: dict[str, Any] = {
        "questions": len(records),
        "answerable": len(ans),
        "unanswerable": len(unans),
    }
    for key in ("exact_match", "token_f1", "answer_contained", "abstention_correct", "trajectory"):
        s[key] = _mean_score(records, key)
    s["exact_match_answerable"] = _mean_score(ans, "exact_match")
    s["token_f1_answerable"] = _mean_score(ans, "token_f1")
    for k in RECALL_KS:
        s[f"recall@{k}"] = _mean_score(ans, f"recall@{k}")
    for k in RECALL_KS:
        s[f"answer_recall@{k}"] = _mean_score(ans, f"answer_recall@{k}")
    s["answer_in_context"] = _mean_score(ans, "answer_in_context")
    s["abstention_rate_answerable"] = _mean(float(bool(r.get("abstained"))) for r in ans)
    s["abstention_rate_unanswerable"] = _mean(float(bool(r.get("abstained"))) for r in unans)
    s["errors"] = sum(1 for r in records if "error" in r)
    secs = [float(r.get("seconds") or 0.0) for r in records]
    s["seconds_per_question_mean"] = _mean(secs)
    s["seconds_per_question_median"] = _median(secs)
    s["node_seconds_median"] = {n: _median(v) for n, v in node_seconds(records).items()}
    s["answered_by"] = dict(Counter(str(r.get("answered_by")) for r in records).most_common())
    s["stage_status"] = dict(
        Counter(e for r in records for e in r.get("route", []) if ": " in e).most_common()
    )  # e.g. {"web: unavailable": 76}: stages that could not run
    s["stage_changes"] = stage_changes(records)
    s["by_question_type"] = _split(records, lambda r: r.get("question_type"))
    s["by_dataset_qtype"] = _split(records, lambda r: r.get("qtype"))
    s["by_answerable"] = _split(
        records, lambda r: "answerable" if r.get("answerable", True) else "unanswerable"
    )
    s["by_language"] = _split(records, lambda r: r.get("language"))
    return s
