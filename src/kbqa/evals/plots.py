"""The report's PNG plots (matplotlib, Agg): token F1 by question type, doc recall@k for
k = 1..10, seconds per node (box plot), abstention calibration (how often it abstains when the
answer was in its context, when it was not, and on unanswerable questions), and, when present,
the ablation and model-scaling bars."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbqa.evals.metrics import recall_at_k
from kbqa.evals.summary import node_seconds

PLOTS_DIR = "plots"
NODE_ORDER = (
    "classify",
    "retrieve",
    "generate",
    "check_abstention",
    "retry",
    "cross_check",
    "verify",
    "fallback",
    "web_search",
    "extract",
    "finalize",
)
"""Nodes in pipeline order, as the latency plot lists them."""
Save = Callable[[Any, str, str], None]


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
    """Abstention rate (and count) for: answer in context, answer not in context, yes/no
    questions (whose gold is no span, :func:`~kbqa.evals.metrics.answer_spans_in_context`) and
    unanswerable questions."""
    groups: dict[str, list[bool]] = {
        "answer in context": [],
        "answer not in context": [],
        "yes/no (no span to find)": [],
        "unanswerable": [],
    }
    for r in records:
        aic = r.get("scores", {}).get("answer_in_context", 0.0)
        if not r["answerable"]:
            groups["unanswerable"].append(r["abstained"])
        elif aic is None:
            groups["yes/no (no span to find)"].append(r["abstained"])
        elif aic >= 1.0:
            groups["answer in context"].append(r["abstained"])
        else:
            groups["answer not in context"].append(r["abstained"])
    return {k: (len(v), sum(v) / len(v) if v else None) for k, v in groups.items()}


def draw_plots(
    records: list[dict[str, Any]], summary: dict[str, Any], out: Path, extra: dict[str, Any]
) -> list[tuple[str, str]]:
    """Draw every plot the run has data for into ``out``; ``(title, relative path)`` of each.

    Raises:
        ImportError: matplotlib is not installed.
    """
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

    _f1_by_type(plt, summary, save)
    _recall(plt, records, summary, save)
    _node_latency(plt, records, save)
    _calibration(plt, records, save)
    _bars(plt, extra, save)
    return made


def _f1_by_type(plt: Any, summary: dict[str, Any], save: Save) -> None:
    by_type = summary.get("by_question_type", {})
    if not by_type:
        return
    fig, ax = plt.subplots(figsize=(7, 3.6))
    names = list(by_type)
    ax.bar(names, [by_type[n]["token_f1"] or 0 for n in names], color="#4C72B0")
    for i, n in enumerate(names):
        ax.text(
            i, (by_type[n]["token_f1"] or 0) + 0.01, f"n={by_type[n]['n']}", ha="center", fontsize=8
        )
    ax.set_ylabel("token F1")
    ax.set_ylim(0, 1)
    ax.set_title("Token F1 by question type (classifier)")
    ax.tick_params(axis="x", rotation=30)
    save(fig, "f1_by_type.png", "Token F1 by question type")


def _recall(plt: Any, records: list[dict[str, Any]], summary: dict[str, Any], save: Save) -> None:
    curve = recall_curve(records)
    if not curve:
        return
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


def _node_latency(plt: Any, records: list[dict[str, Any]], save: Save) -> None:
    """Horizontal boxes, one row per node in pipeline order, so long node names never collide."""
    secs = node_seconds(records)
    if not secs:
        return
    names = [n for n in NODE_ORDER if n in secs] + sorted(set(secs) - set(NODE_ORDER))
    fig, ax = plt.subplots(figsize=(7, 0.42 * len(names) + 1.3))
    ax.boxplot([secs[n] for n in names], orientation="horizontal", showfliers=True)
    ax.set_yticks(range(1, len(names) + 1), names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("seconds (log)")
    ax.set_title("Latency per node")
    save(fig, "node_latency.png", "Latency per node")


def _calibration(plt: Any, records: list[dict[str, Any]], save: Save) -> None:
    cal = abstention_calibration(records)
    if not any(n for n, _ in cal.values()):
        return
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.bar(
        list(cal),
        [rate or 0 for _, rate in cal.values()],
        color=["#55A868", "#C44E52", "#CCB974", "#8172B2"],
    )
    for i, (n, rate) in enumerate(cal.values()):
        ax.text(i, (rate or 0) + 0.01, f"n={n}" if n else "no questions", ha="center", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("abstention rate")
    ax.set_title("Abstention calibration (ideal: low, high, low, high)")
    save(fig, "abstention_calibration.png", "Abstention calibration")


def _bars(plt: Any, extra: dict[str, Any], save: Save) -> None:
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
