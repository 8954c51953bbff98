"""A Markdown report for one run directory: the summary, what each stage did, splits by type and
language, the ablation and model tables, the worst answers, and the plots
(:mod:`kbqa.evals.plots`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbqa.evals.evaluators import RECALL_KS
from kbqa.evals.plots import PLOTS_DIR, draw_plots

REPORT_FILE = "report.md"


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return " ".join(str(value).split()).replace("|", "\\|")


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    """A GitHub Markdown table; floats to 3 decimals, ``None`` as ``n/a``, other values on one
    line with ``|`` escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def summary_rows(summary: dict[str, Any]) -> list[list[Any]]:
    """Headline figures as ``[name, value]`` rows."""
    keys = (
        "questions",
        "answerable",
        "unanswerable",
        "exact_match",
        "token_f1",
        "answer_contained",
        "exact_match_answerable",
        "token_f1_answerable",
        *(f"recall@{k}" for k in RECALL_KS),
        *(f"answer_recall@{k}" for k in RECALL_KS),
        "answer_in_context",
        "abstention_rate_answerable",
        "abstention_rate_unanswerable",
        "abstention_correct",
        "trajectory",
        "errors",
        "seconds_per_question_median",
        "seconds_per_question_mean",
        "peak_rss_mib",
    )
    return [[k, summary.get(k)] for k in keys if k in summary]


WORST_ANSWERS = 15
"""Rows of the report's worst-answers table (and at most as many answered unanswerable ones)."""


def summary_text(summary: dict[str, Any]) -> str:
    """Headline figures (:func:`summary_rows`, plus the harness's timing when the summary has
    it) as an aligned two-column table, a line per figure."""
    rows = summary_rows(summary)
    h = summary.get("harness")
    if isinstance(h, dict):
        ratio = h.get("overhead_ratio")
        rows += [
            ["graph wall s (sum)", f"{h['graph_seconds']:.1f}"],
            ["eval wall s", f"{h['wall_seconds']:.1f}"],
            ["harness overhead", "n/a" if ratio is None else f"{ratio * 100:+.1f}% of graph time"],
        ]
    width = max(len(str(r[0])) for r in rows)

    def show(value: object) -> str:
        if value is None:
            return "n/a"
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    return "\n".join(f"{r[0]!s:<{width}}  {show(r[1])}" for r in rows)


def _cell(text: Any, limit: int = 120) -> str:
    """Text cut to ``limit`` characters, on one line (:func:`markdown_table` escapes ``|``)."""
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _yes_no(value: Any) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def _f1(record: dict[str, Any]) -> float | None:
    scores = record.get("scores")
    f1 = scores.get("token_f1") if isinstance(scores, dict) else None
    return float(f1) if isinstance(f1, int | float) and not isinstance(f1, bool) else None


def worst_answers(records: list[dict[str, Any]], n: int = WORST_ANSWERS) -> list[list[Any]]:
    """Rows for the report's table of the ``n`` lowest-F1 answerable questions (wrong answers
    before abstentions at equal F1): question, first gold answer, the answer, its F1, whether a
    gold answer was in the context read, whether the gold document was read, and the stage that
    answered. Records without a numeric token F1, and right answers (F1 1; a new user read a
    short run's table of every answerable question, right ones too), are left out."""
    scored = [
        r
        for r in records
        if r.get("answerable") is not False and (f1 := _f1(r)) is not None and f1 < 1.0
    ]
    scored.sort(key=lambda r: (_f1(r), bool(r.get("abstained"))))
    rows = []
    for r in scored[:n]:
        read, gold_doc, gold = r.get("context_doc_ids"), r.get("gold_doc_id"), r.get("gold")
        gold = [gold] if isinstance(gold, str) else gold if isinstance(gold, list) else []
        rows.append(
            [
                _cell(r.get("question") or ""),
                _cell(gold[0] if gold else ""),
                "(abstained)" if r.get("abstained") else _cell(r.get("answer") or ""),
                _f1(r),
                _yes_no(r["scores"].get("answer_in_context")),
                _yes_no(gold_doc in read) if isinstance(read, list) and gold_doc else "n/a",
                _cell(r.get("answered_by") or ""),
            ]
        )
    return rows


def answered_unanswerable(records: list[dict[str, Any]], n: int = WORST_ANSWERS) -> list[list[Any]]:
    """Rows for the first ``n`` unanswerable questions that got an answer instead of the
    abstention: question, answer, the stage that answered."""
    rows = [r for r in records if r.get("answerable") is False and not r.get("abstained")]
    return [
        [
            _cell(r.get("question") or ""),
            _cell(r.get("answer") or ""),
            _cell(r.get("answered_by") or ""),
        ]
        for r in rows[:n]
    ]


def write_report(
    run_dir: str | Path,
    records: list[dict[str, Any]],
    summary: dict[str, Any],
    *,
    title: str = "kbqa evaluation",
    plots: bool = True,
) -> Path:
    """Write ``report.md`` (and ``plots/*.png``) into ``run_dir``; return the report's path.

    Ablation and model tables are read from ``ablation.json`` / ``models.json`` in ``run_dir``
    when present. ``plots=False`` (or no matplotlib) writes the tables only.
    """
    d = Path(run_dir)
    extra: dict[str, Any] = {}
    for key in ("ablation", "models"):
        p = d / f"{key}.json"
        if p.is_file():
            extra[key] = json.loads(p.read_text(encoding="utf-8"))
    parts = [
        *_head(summary, title),
        *_stages(summary),
        *_splits(summary),
        *_comparisons(extra),
        *_failures(records),
    ]
    if plots:
        try:
            made = draw_plots(records, summary, d / PLOTS_DIR, extra)
        except ImportError:
            made = []
            parts += ["(plots skipped: matplotlib is not installed)", ""]
        if made:
            parts += ["## Plots", ""]
            parts += [f"### {t}\n\n![{t}]({p})\n" for t, p in made]
    path = d / REPORT_FILE
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _head(summary: dict[str, Any], title: str) -> list[str]:
    """Title, model and index, a partial run's notice, the summary table, harness overhead."""
    parts = [f"# {title}", ""]
    meta = [
        f"{label} `{summary[key]}`"
        for key, label in (("model", "model"), ("index_dir", "index"))
        if summary.get(key)
    ]
    parts += [", ".join(meta), ""] if meta else []
    if summary.get("partial"):
        parts += [
            f"**Partial run**: {summary.get('questions')} questions finished before it was "
            "interrupted. Run the same `kbqa eval` command again to finish it.",
            "",
        ]
    if summary_rows(summary):
        parts += ["## Summary", "", markdown_table(["figure", "value"], summary_rows(summary)), ""]
    h = summary.get("harness")
    if h:
        ratio = h.get("overhead_ratio")
        parts += [
            f"Harness overhead: the evaluation took {h['wall_seconds']} s of wall time for "
            f"{h['graph_seconds']} s of graph runs over {h.get('questions_run', '?')} "
            f"questions in {h.get('sessions', 1)} session(s): "
            + (f"{ratio * 100:+.1f}%." if ratio is not None else "n/a."),
            "",
        ]
    return parts


def _stages(summary: dict[str, Any]) -> list[str]:
    """Which stage produced the answer, what each later stage changed, seconds per node."""
    parts: list[str] = []
    if summary.get("answered_by"):
        rows = [[k, v] for k, v in summary.get("answered_by", {}).items()]
        parts += [
            "## Which stage produced the answer",
            "",
            markdown_table(["stage", "answers"], rows),
            "",
        ]
    changes = summary.get("stage_changes", {})
    if changes:
        cols = ["later stage", "ran", "changed answer", "F1 up", "F1 down", "F1 same"]
        rows = [
            [st, c["seen"], c["changed"], c["raised"], c["lowered"], c["same_f1"]]
            for st, c in changes.items()
        ]
        parts += [markdown_table(cols, rows), ""]
    node_med = summary.get("node_seconds_median", {})
    if node_med:
        rows = [[k, v] for k, v in node_med.items()]
        parts += ["## Median seconds per node", "", markdown_table(["node", "median s"], rows), ""]
    return parts


def _splits(summary: dict[str, Any]) -> list[str]:
    """EM and F1 by question type, dataset type, answerability and language."""
    parts: list[str] = []
    for key, name in (
        ("by_question_type", "question type (classifier)"),
        ("by_dataset_qtype", "dataset qtype"),
        ("by_answerable", "answerability"),
        ("by_language", "language"),
    ):
        split = summary.get(key, {})
        if split and list(split) != ["None"]:
            rows = [[k, v["n"], v["exact_match"], v["token_f1"]] for k, v in split.items()]
            parts += [f"## By {name}", "", markdown_table([name, "n", "EM", "F1"], rows), ""]
    return parts


COMPARISON_COLUMNS = [
    "name",
    "token_f1",
    "exact_match",
    "recall@1",
    "recall@3",
    "answer_in_context",
    "abstention_rate_answerable",
    "abstention_rate_unanswerable",
]


def _comparisons(extra: dict[str, Any]) -> list[str]:
    """The ablation and model-scaling tables."""
    parts: list[str] = []
    for key, heading in (("ablation", "Ablations"), ("models", "Model scaling")):
        rows = extra.get(key)
        if not rows:
            continue
        cols = list(COMPARISON_COLUMNS)
        if key == "models":
            cols += ["seconds_per_question_median", "peak_rss_mib"]
        else:
            parts += [
                "Seconds per question are left out: generations are memoised by prompt "
                "across ablations.",
                "",
            ]
        parts += [
            f"## {heading}",
            "",
            markdown_table(cols, [[r.get(c) for c in cols] for r in rows]),
            "",
        ]
    return parts


def _failures(records: list[dict[str, Any]]) -> list[str]:
    """The worst-scored answerable questions and the unanswerable ones answered."""
    parts: list[str] = []
    worst = worst_answers(records)
    if worst:
        cols = [
            "question",
            "gold",
            "answer",
            "F1",
            "gold answer read",
            "gold document read",
            "answered by",
        ]
        parts += [
            "## Worst answers",
            "",
            "The answerable questions with the lowest F1; the last columns say whether a gold "
            "answer, and the gold document, were in the context the reader read (retrieval) or "
            "not (then reading failed).",
            "",
            markdown_table(cols, worst),
            "",
        ]
    wrong = answered_unanswerable(records)
    if wrong:
        parts += [
            "## Unanswerable questions answered",
            "",
            markdown_table(["question", "answer", "answered by"], wrong),
            "",
        ]
    return parts
