"""A Markdown report with PNG plots for one run directory.

Plots: token F1 by question type, doc recall@k for k = 1..10, seconds per node (box plot),
abstention calibration (how often it abstains when the answer was in its context, when it was not,
and on unanswerable questions), and, when present, the ablation and model-scaling bars.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbqa.evals.evaluators import RECALL_KS
from kbqa.evals.metrics import recall_at_k
from kbqa.evals.summary import node_seconds

REPORT_FILE = "report.md"
PLOTS_DIR = "plots"
NODE_ORDER = ("classify", "retrieve", "generate", "check_abstention", "retry", "finalize")


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


def recall_curve(records: list[dict[str, Any]], max_k: int = 10) -> list[float]:
    """Doc recall@k for k = 1..``max_k`` over answerable records with a gold doc."""
    rs = [r for r in records if r.get("answerable", True) and r.get("gold_doc_id")]
    if not rs:
        return []
    return [
        sum(recall_at_k(r["retrieved_doc_ids"], r["gold_doc_id"], k) for r in rs) / len(rs)
        for k in range(1, max_k + 1)
    ]


def abstention_calibration(records: list[dict[str, Any]]) -> dict[str, tuple[int, float | None]]:
    """Abstention rate (and count) for: answer in context, answer not in context, unanswerable."""
    groups: dict[str, list[bool]] = {
        "answer in context": [],
        "answer not in context": [],
        "unanswerable": [],
    }
    for r in records:
        if not r["answerable"]:
            groups["unanswerable"].append(r["abstained"])
        elif r.get("scores", {}).get("answer_in_context", 0.0) >= 1.0:
            groups["answer in context"].append(r["abstained"])
        else:
            groups["answer not in context"].append(r["abstained"])
    return {k: (len(v), sum(v) / len(v) if v else None) for k, v in groups.items()}


def _plots(
    records: list[dict[str, Any]], summary: dict[str, Any], out: Path, extra: dict[str, Any]
) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    made: list[tuple[str, str]] = []

    def save(fig: Any, name: str, title: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append((title, f"{PLOTS_DIR}/{name}"))

    by_type = summary.get("by_question_type", {})
    if by_type:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        names = list(by_type)
        ax.bar(names, [by_type[n]["token_f1"] or 0 for n in names], color="#4C72B0")
        for i, n in enumerate(names):
            ax.text(
                i,
                (by_type[n]["token_f1"] or 0) + 0.01,
                f"n={by_type[n]['n']}",
                ha="center",
                fontsize=8,
            )
        ax.set_ylabel("token F1")
        ax.set_ylim(0, 1)
        ax.set_title("Token F1 by question type (classifier)")
        ax.tick_params(axis="x", rotation=30)
        save(fig, "f1_by_type.png", "Token F1 by question type")

    curve = recall_curve(records)
    if curve:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        ks = list(range(1, len(curve) + 1))
        ax.plot(ks, curve, marker="o", label="doc recall@k")
        aic = summary.get("answer_in_context")
        if aic is not None:
            ax.axhline(aic, color="#DD8452", ls="--", label=f"answer in LLM context ({aic:.2f})")
        ax.set_xlabel("k (distinct documents)")
        ax.set_ylabel("recall")
        ax.set_ylim(0, 1.02)
        ax.set_xticks(ks)
        ax.legend(loc="lower right")
        ax.set_title("Retrieval: gold document in the top k")
        save(fig, "recall_at_k.png", "Doc recall@k")

    secs = node_seconds(records)
    if secs:
        names = [n for n in NODE_ORDER if n in secs] + sorted(set(secs) - set(NODE_ORDER))
        fig, ax = plt.subplots(figsize=(7, 3.6))
        ax.boxplot([secs[n] for n in names], showfliers=True)
        ax.set_xticks(range(1, len(names) + 1), names, rotation=20)
        ax.set_yscale("log")
        ax.set_ylabel("seconds (log)")
        ax.set_title("Latency per node")
        save(fig, "node_latency.png", "Latency per node")

    cal = abstention_calibration(records)
    if any(n for n, _ in cal.values()):
        fig, ax = plt.subplots(figsize=(6, 3.6))
        names = list(cal)
        ax.bar(
            names, [rate or 0 for _, rate in cal.values()], color=["#55A868", "#C44E52", "#8172B2"]
        )
        for i, (n, rate) in enumerate(cal.values()):
            label = f"n={n}" if n else "no questions"
            ax.text(i, (rate or 0) + 0.01, label, ha="center", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("abstention rate")
        ax.set_title("Abstention calibration (ideal: low, high, high)")
        save(fig, "abstention_calibration.png", "Abstention calibration")

    for key, title, fname in (
        ("ablation", "Ablations", "ablation.png"),
        ("models", "Model scaling", "models.png"),
    ):
        rows = extra.get(key)
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.4))
        names = [r["name"].split(" (")[0] if len(r["name"]) > 28 else r["name"] for r in rows]
        ax.barh(names, [r.get("token_f1") or 0 for r in rows], color="#4C72B0", label="token F1")
        ax.barh(
            names,
            [r.get("recall@3") or 0 for r in rows],
            color="none",
            edgecolor="#DD8452",
            label="recall@3",
        )
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, fontsize=8)
        ax.set_title(title)
        save(fig, fname, title)
    return made


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
    answered. Records without a numeric token F1 are left out."""
    scored = [r for r in records if r.get("answerable") is not False and _f1(r) is not None]
    scored.sort(key=lambda r: (_f1(r), bool(r.get("abstained"))))
    rows = []
    for r in scored[:n]:
        read, gold_doc, gold = r.get("context_doc_ids"), r.get("gold_doc_id"), r.get("gold")
        gold = [gold] if isinstance(gold, str) else gold if isinstance(gold, list) else []
        rows.append([
            _cell(r.get("question") or ""),
            _cell(gold[0] if gold else ""),
            "(abstained)" if r.get("abstained") else _cell(r.get("answer") or ""),
            _f1(r),
            _yes_no(r["scores"].get("answer_in_context")),
            _yes_no(gold_doc in read) if isinstance(read, list) and gold_doc else "n/a",
            _cell(r.get("answered_by") or ""),
        ])  # fmt: skip
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
    if summary.get("answered_by"):
        parts += ["## Which stage produced the answer", ""]
        parts += [
            markdown_table(
                ["stage", "answers"], [[k, v] for k, v in summary.get("answered_by", {}).items()]
            ),
            "",
        ]
    changes = summary.get("stage_changes", {})
    if changes:
        parts += [
            markdown_table(
                ["later stage", "ran", "changed answer", "F1 up", "F1 down", "F1 same"],
                [
                    [st, c["seen"], c["changed"], c["raised"], c["lowered"], c["same_f1"]]
                    for st, c in changes.items()
                ],
            ),
            "",
        ]
    for key, name in (
        ("by_question_type", "question type (classifier)"),
        ("by_dataset_qtype", "dataset qtype"),
        ("by_answerable", "answerability"),
        ("by_language", "language"),
    ):
        split = summary.get(key, {})
        if split and list(split) != ["None"]:
            parts += [
                f"## By {name}",
                "",
                markdown_table(
                    [name, "n", "EM", "F1"],
                    [[k, v["n"], v["exact_match"], v["token_f1"]] for k, v in split.items()],
                ),
                "",
            ]
    node_med = summary.get("node_seconds_median", {})
    if node_med:
        parts += [
            "## Median seconds per node",
            "",
            markdown_table(["node", "median s"], [[k, v] for k, v in node_med.items()]),
            "",
        ]
    for key, heading in (("ablation", "Ablations"), ("models", "Model scaling")):
        rows = extra.get(key)
        if rows:
            cols = [
                "name",
                "token_f1",
                "exact_match",
                "recall@1",
                "recall@3",
                "answer_in_context",
                "abstention_rate_answerable",
                "abstention_rate_unanswerable",
            ]
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
    worst = worst_answers(records)
    if worst:
        parts += [
            "## Worst answers",
            "",
            "The answerable questions with the lowest F1; the last columns say whether a gold "
            "answer, and the gold document, were in the context the reader read (retrieval) or "
            "not (then reading failed).",
            "",
            markdown_table(
                [
                    "question",
                    "gold",
                    "answer",
                    "F1",
                    "gold answer read",
                    "gold document read",
                    "answered by",
                ],
                worst,
            ),
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
    if plots:
        try:
            made = _plots(records, summary, d / PLOTS_DIR, extra)
        except ImportError:
            made = []
            parts += ["(plots skipped: matplotlib is not installed)", ""]
        if made:
            parts += ["## Plots", ""]
            parts += [f"### {t}\n\n![{t}]({p})\n" for t, p in made]
    path = d / REPORT_FILE
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
