"""benchmarks/reranker_ranks.py: the answer chunk's place in the fused pool before and after a
reranker (issue 33's recall@1, recall@3 and MRR@10 table)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kbqa.context import Context
from kbqa.evals.datasets import Question
from kbqa.resources import retriever_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import reranker_ranks

QUESTIONS = [
    Question("1", "বাংলাদেশের রাজধানী কোথায়?", ["ঢাকা"]),
    Question("2", "Where does Paris lie?", ["the Seine"]),
    Question("3", "রবীন্দ্রনাথ কি নোবেল পুরস্কার পান?", ["হ্যাঁ"]),  # yes/no: in no row
]


class Oracle:
    """Scores the chunks that hold a gold answer 1, the rest 0."""

    id = "oracle"

    def score(self, question: str, passages: list[tuple[str, str]]) -> list[float]:
        gold = {"বাংলাদেশের রাজধানী কোথায়?": "ঢাকা", "Where does Paris lie?": "Seine"}[question]
        return [1.0 if gold in text else 0.0 for _, text in passages]


class Reverse:
    """Puts the fused pool upside down."""

    id = "reverse"

    def score(self, question: str, passages: list[tuple[str, str]]) -> list[float]:
        return [float(i) for i in range(len(passages))]


def test_rows_rank_the_answer_chunk_before_and_after(tiny_index: Path) -> None:
    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash")
    pool = len(retriever_for(ctx).chunks)  # every chunk: the answer's is in the pool
    scorers = {"oracle": Oracle(), "reverse": Reverse()}
    rows = dict(reranker_ranks.ranks(ctx, QUESTIONS, scorers, pool))
    assert list(rows) == ["fused", "oracle", "reverse"]
    assert rows["fused"]["n"] == rows["oracle"]["n"] == rows["reverse"]["n"] == 2
    assert rows["oracle"]["recall@1"] == rows["oracle"]["mrr@10"] == 1.0
    assert rows["reverse"]["mrr@10"] < rows["fused"]["mrr@10"] <= 1.0
    assert rows["fused"]["ms"] == "-" and isinstance(rows["oracle"]["ms"], float)


def test_a_pool_without_the_answer_counts_in_no_row(tiny_index: Path) -> None:
    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash")
    curie = [Question("9", "Where was Marie Curie born?", ["Warsaw"])]
    rows = dict(reranker_ranks.ranks(ctx, curie, {"oracle": Oracle()}, 5))
    assert rows["fused"]["n"] == rows["oracle"]["n"] == 0
    assert rows["oracle"]["ms"] == "-"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rerankers", "off"], "must be a reranker, not 'off'"),
        (["--rerankers", "lexical,,"], "must be a reranker, not ''"),
        (["--rerankers", "nosuch"], "gemma3-270m-reranker \\(shipped\\)"),
        (["--pool", "0"], "--pool must be at least 1"),
        (["--questions", "{q}:abc"], "expected FILE, FILE:N or FILE:N:SEED"),
        (["--questions", "{q}:2:0:9"], "expected FILE, FILE:N or FILE:N:SEED"),
        (["--questions", "{q}:0"], "N must be at least 1"),
        (["--questions", "{q}.missing"], "q.jsonl.missing"),
        (["--index", "{tmp}/no-index"], "index not found"),
    ],
)
def test_bad_input_is_a_one_line_error_before_any_table(
    args: list[str], message: str, tiny_index: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    q = tmp_path / "q.jsonl"
    q.write_text('{"qid": "1", "question": "Where does Paris lie?", "answers": ["Seine"]}\n')
    given = dict(zip(args[::2], (a.format(q=q, tmp=tmp_path) for a in args[1::2]), strict=True))
    argv = {"--index": str(tiny_index), "--questions": str(q)} | given
    with pytest.raises(SystemExit, match=message):
        reranker_ranks.main([x for kv in argv.items() for x in kv])
    assert "| reranker |" not in capsys.readouterr().out


def test_a_set_with_nothing_to_count_says_so(
    tiny_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = tmp_path / "q.jsonl"
    q.write_text('{"qid": "1", "question": "রবীন্দ্রনাথ কি নোবেল পান?", "answers": ["হ্যাঁ"]}\n')
    reranker_ranks.main(["--index", str(tiny_index), "--questions", str(q)])
    out = capsys.readouterr().out
    assert "no question of this set" in out and "0.000" not in out
