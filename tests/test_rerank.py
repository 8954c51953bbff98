"""The rerank step: the lexical reranker's scores, the combination with fused scores, the IDF
read from the BM25 index, and retrieval with a reranker on (pool, k, padding)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from kbqa.context import Context
from kbqa.embedders import HashEmbedder
from kbqa.index import load_index
from kbqa.passages import retrieve_records
from kbqa.retrieval.rerank import (
    SentenceReranker,
    add_reranked,
    bm25_idf,
    load_reranker,
    rerank_hits,
    split_sentences,
)
from kbqa.retrieval.retriever import HybridRetriever
from kbqa.retrieval.tokenizer import tokenize, with_ngrams


class Reversed:
    """A stand-in reranker that prefers later passages."""

    id = "reversed"

    def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        return [float(i) for i in range(len(passages))]


def test_a_passage_scores_as_its_best_sentence() -> None:
    question = "পদ্মা নদী কোথায় মিলিত হয়েছে?"
    near = "অন্য কথা এখানে। পদ্মা নদী গোয়ালন্দে যমুনার সঙ্গে মিলিত হয়েছে। আরও কথা।"
    spread = "পদ্মা একটি নাম। নদী অনেক আছে। মিলিত হওয়া একটি ক্রিয়া।"  # the same words, apart
    none = "ঢাকা বাংলাদেশের রাজধানী।"
    scores = SentenceReranker().score(question, [("", spread), ("t", near), ("পদ্মা", none)])
    assert scores[1] > scores[0] > scores[2] == 0.0


def test_reranker_scores_nothing_for_a_question_without_words() -> None:
    assert SentenceReranker().score("?!", [("", "ঢাকা।"), ("", "Paris.")]) == [0.0, 0.0]
    assert SentenceReranker().score("ঢাকা?", []) == []
    with pytest.raises(TypeError, match="strings"):
        SentenceReranker().score("ঢাকা?", [("", None)])  # type: ignore[list-item]


def test_split_sentences_follows_the_chunker() -> None:
    assert split_sentences("এক। দুই? Three. Four!\nপাঁচ") == ["এক।", "দুই?", "Three.", "Four!", "পাঁচ"]


def test_rerank_hits_combines_scores_divided_by_their_best() -> None:
    hits = [(10, 1.0), (11, 0.9), (12, 0.1)]
    texts = [("", "a"), ("", "b"), ("", "c")]
    # fused weight 1 keeps the fused order, 0 takes the reranker's alone
    assert [c for c, _ in rerank_hits("q", hits, texts, Reversed(), 3, 1.0)] == [10, 11, 12]
    assert [c for c, _ in rerank_hits("q", hits, texts, Reversed(), 2, 0.0)] == [12, 11]
    # min-max over the pool: fused 1.0, 0.9, 0.1 -> 1, 8/9, 0; reranker 0, 1, 2 -> 0, 0.5, 1
    # 0.5: 10 -> 0.5, 11 -> 4/9 + 0.25 = 0.694, 12 -> 0 + 0.5 = 0.5 (a tie keeps fused order)
    got = rerank_hits("q", hits, texts, Reversed(), 3, 0.5)
    assert [c for c, _ in got] == [11, 10, 12]
    assert [s for _, s in got] == pytest.approx([4 / 9 + 0.25, 0.5, 0.5])


def test_negative_scores_rank_as_scores() -> None:
    """Break-it trial: a logit below zero (an LLM reranker's) was divided by the best one and
    inverted the order."""

    class Logits(Reversed):
        id = "logits"

        def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
            return [-1.0, -5.0, -9.0]

    hits = [(1, -0.2), (2, -0.5), (3, -0.9)]
    texts = [("", "a"), ("", "b"), ("", "c")]
    assert [c for c, _ in rerank_hits("q", hits, texts, Logits(), 3, 0.0)] == [1, 2, 3]
    assert [c for c, _ in rerank_hits("q", hits, texts, Logits(), 3, 1.0)] == [1, 2, 3]

    class NaN(Reversed):
        id = "nan"

        def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
            return [float("nan")] * len(passages)

    with pytest.raises(ValueError, match="not finite"):
        rerank_hits("q", hits, texts, NaN(), 3)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        rerank_hits("q", hits, texts, Logits(), 1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be a positive integer"),
        ({"fused_weight": 1.5}, "fused_weight"),
        ({"texts": [("", "only one")]}, "2 hits but 1 passages"),
    ],
)
def test_rerank_hits_refuses_bad_arguments(kwargs: dict, message: str) -> None:
    args = {"k": 1, "fused_weight": 0.3, "texts": [("", "a"), ("", "b")]} | kwargs
    with pytest.raises(ValueError, match=message):
        rerank_hits("q", [(1, 1.0), (2, 0.5)], args["texts"], Reversed(), args["k"],
                    args["fused_weight"])  # fmt: skip


def test_a_reranker_returning_too_few_scores_is_named() -> None:
    class Short(Reversed):
        id = "short"

        def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
            return [1.0]

    with pytest.raises(ValueError, match="reranker 'short' returned 1 scores for 2 passages"):
        rerank_hits("q", [(1, 1.0), (2, 0.5)], [("", "a"), ("", "b")], Short(), 1)


def test_add_reranked_keeps_the_fused_top_k_and_adds_the_rerankers_best_of_the_rest() -> None:
    hits = [(10, 0.9), (11, 0.8), (12, 0.7), (13, 0.6), (14, 0.5)]
    passages = [("", str(cid)) for cid, _ in hits]
    # Reversed prefers later passages: 14 is its best, then 13; the fused top 2 stay first
    assert add_reranked("q", hits, passages, Reversed(), 2, 1, 0.0) == [
        (10, 0.9), (11, 0.8), (14, 0.5)]  # fmt: skip
    assert add_reranked("q", hits, passages, Reversed(), 2, 2, 0.0)[2:] == [(14, 0.5), (13, 0.6)]
    assert add_reranked("q", hits, passages, Reversed(), 4, 1, 0.0) == [*hits[:4], (14, 0.5)]
    assert add_reranked("q", hits, passages, Reversed(), 5, 3, 0.0) == hits  # nothing left
    assert add_reranked("q", hits, passages, Reversed(), 2, 0, 0.0) == hits[:2]
    # at fused weight 1 the reranked order is the fused one: its best two are already kept,
    # so the hit added is the next one (a hit among the top k is never added twice)
    assert add_reranked("q", hits, passages, Reversed(), 2, 1, 1.0)[2] == (12, 0.7)
    assert add_reranked("q", [], [], Reversed(), 2, 1) == []
    # a chunk excluded (a top hit's padding) is passed over for the next best
    assert add_reranked("q", hits, passages, Reversed(), 2, 1, 0.0, exclude={14}) == [
        (10, 0.9), (11, 0.8), (13, 0.6)]  # fmt: skip
    with pytest.raises(ValueError, match="add must be a whole number >= 0, got -1"):
        add_reranked("q", hits, passages, Reversed(), 2, -1)
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        add_reranked("q", hits, passages, Reversed(), 0, 1)


def test_load_reranker_names_the_known_ones() -> None:
    assert load_reranker("off") is None
    assert isinstance(load_reranker("lexical"), SentenceReranker)
    with pytest.raises(ValueError, match="off, lexical"):
        load_reranker("bge")


def test_context_validates_the_reranker_settings() -> None:
    with pytest.raises(
        ValueError,
        match=r"reranker must be one of off, lexical, gemma3-270m-reranker \(shipped\), "
        r"hf:PATH_OR_NAME, bge-reranker-v2-m3\[:FOLDER\] or a directory",
    ):
        Context(reranker="bge").check_paths()
    with pytest.raises(ValueError, match="rerank_weight must be in"):
        Context(rerank_weight=2.0)
    with pytest.raises(ValueError, match="rerank_pool must be a positive integer"):
        Context(rerank_pool=0)
    with pytest.raises(ValueError, match=r"rerank_pool \(2\) must be at least k \+ rerank_add"):
        Context(reranker="lexical", rerank_pool=2, k=3)
    with pytest.raises(ValueError, match=r"\(3 \+ 1\)"):
        Context(reranker="lexical", rerank_pool=3, k=3, rerank_add=1)
    with pytest.raises(ValueError, match="rerank_add must be a whole number >= 0, got -1"):
        Context(rerank_add=-1)
    Context(rerank_pool=2, k=3)  # the pool only matters with a reranker on


def test_a_directory_that_is_no_reranker_is_named_with_the_reason(tmp_path: Path) -> None:
    from kbqa.errors import ModelError
    from kbqa.llm.rerank import load_llm_reranker

    folder = tmp_path / "adapter"
    cases = [
        (None, "no such directory"),
        ("", "it has no manifest.json"),
        ("{not json", "its manifest.json does not read as JSON"),
        ("[1]", "its manifest.json is not a JSON object"),
        ('{"role": "verifier"}', 'has "role": "verifier", not "reranker"'),
        ('{"name": "gemma3-270m-reader"}', 'has "role": "reader", not "reranker"'),
    ]
    for manifest, reason in cases:
        if manifest is not None:
            folder.mkdir(exist_ok=True)
            (folder / "manifest.json").unlink(missing_ok=True)
            if manifest:
                (folder / "manifest.json").write_text(manifest)
        ctx = Context(reranker=str(folder))  # no file is read until the run starts
        with pytest.raises(ValueError, match=re.escape(reason)):
            ctx.check_paths()
        with pytest.raises(ModelError, match=re.escape(reason)):
            load_llm_reranker(folder)


def _other_weights(shipped: Path, folder: Path) -> Path:
    """A copy of a shipped adapter folder whose last weight differs in its lowest bit (no
    longer the shipped weights, whose role would win: :func:`kbqa.llm.lora.shipped_weights`),
    its manifest without the shipped file's sha256."""
    shutil.copytree(shipped, folder)
    with (folder / "adapter.gguf").open("r+b") as fh:
        fh.seek(-1, 2)
        last = fh.read(1)[0]
        fh.seek(-1, 2)
        fh.write(bytes([last ^ 1]))
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    manifest.pop("adapter_sha256")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_reranker_manifest_naming_an_unknown_base_is_named(tmp_path: Path) -> None:
    from kbqa.errors import ModelError
    from kbqa.llm.lora import shipped_adapter
    from kbqa.llm.rerank import load_llm_reranker

    folder = _other_weights(shipped_adapter("gemma3-270m-reader"), tmp_path / "reranker")
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    manifest.update(role="reranker", base_model="no-such-model")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelError, match=r"manifest\.json names base_model 'no-such-model'"):
        load_llm_reranker(folder)


def test_a_reranker_adapter_is_refused_as_a_reader(tmp_path: Path) -> None:
    from kbqa.errors import ModelError
    from kbqa.llm.lora import shipped_adapter
    from kbqa.llm.models import resolve_adapter

    folder = _other_weights(shipped_adapter("gemma3-270m-reader"), tmp_path / "reranker")
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    (folder / "manifest.json").write_text(json.dumps({**manifest, "role": "reranker"}))
    with pytest.raises(ModelError, match=r"a reranker's adapter .* serve it with --reranker"):
        resolve_adapter("gemma3-270m", str(folder))


@pytest.mark.parametrize(
    ("role", "serving", "message"),
    [("banana", "reader", "names the role 'banana', which kbqa does not know"),
     ("verifier", "reader", "a verifier's adapter .* serve it with --verifier-adapter"),
     ("reranker", "verifier", "a reranker's adapter .* not as the verifier"),
     (None, "reader", None), ("reader", "verifier", None), ("verifier", "verifier", None)],
)  # fmt: skip
def test_an_adapter_serves_only_in_its_own_role(
    tmp_path: Path, role: str | None, serving: str, message: str | None
) -> None:
    """A break-it trial: a manifest with "role": "banana" or "verifier" was served as the
    reader without a word."""
    from kbqa.errors import ModelError
    from kbqa.llm.lora import shipped_adapter
    from kbqa.llm.models import resolve_adapter

    folder = _other_weights(shipped_adapter("gemma3-270m-reader"), tmp_path / "adapter")
    manifest = json.loads((folder / "manifest.json").read_text("utf-8"))
    if role is not None:
        manifest["role"] = role
    (folder / "manifest.json").write_text(json.dumps(manifest))
    if message is None:
        assert resolve_adapter("gemma3-270m", str(folder), serving) is not None
    else:
        with pytest.raises(ModelError, match=message):
            resolve_adapter("gemma3-270m", str(folder), serving)


def test_term_idf_reads_the_document_frequencies_of_the_index(tiny_index: Path) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    chunks = retriever.chunks
    terms = ["বাংলাদেশের", "ঢাকা", "nosuchword", *with_ngrams(["নদী"])[1:3]]
    idf = retriever.term_idf(terms)
    for t in terms:  # counted by hand over the chunks' BM25 terms (title and text)
        df = sum(t in set(with_ngrams(tokenize(f"{c.title} {c.text}"))) for c in chunks)
        assert idf[t] == pytest.approx(bm25_idf(len(chunks), df)), t
    assert idf["nosuchword"] > idf["ঢাকা"] > idf["বাংলাদেশের"]


def test_retrieval_with_the_reranker_reads_k_of_the_pool_with_previous_chunks(
    tiny_index: Path,
) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    chunks = retriever.chunks
    long_ids = [c.chunk_id for c in chunks if c.doc_id == "long"]
    target = chunks[long_ids[3]]
    question = target.text.split("।")[1]  # one sentence of the chunk
    off = Context(retriever=retriever, k=2)
    on = Context(retriever=retriever, k=2, reranker="lexical", rerank_pool=6, rerank_weight=0.0)
    plain = retrieve_records(question, 2, off)
    reranked = retrieve_records(question, 2, on)
    hits = [r for r in reranked if not r["is_padding"]]
    assert len(hits) == 2 and [r["rank"] for r in hits] == [1, 2]
    assert target.chunk_id in {r["chunk_id"] for r in hits}
    for r in reranked:  # each hit's previous chunk comes before it, as without a reranker
        if r["is_padding"]:
            assert chunks[r["chunk_id"] + 1].prev_chunk_id == r["chunk_id"]
    assert {r["chunk_id"] for r in plain} != set() and reranked[0]["score"] <= 1.0
    no_pad = retrieve_records(question, 2, Context(retriever=retriever, reranker="lexical",
                                                   pad_previous=False))  # fmt: skip
    assert [r["is_padding"] for r in no_pad] == [False, False]


def test_retrieval_with_rerank_add_reads_the_fused_hits_first_then_the_added_one(
    tiny_index: Path,
) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    chunks = retriever.chunks
    long_ids = [c.chunk_id for c in chunks if c.doc_id == "long"]
    question = chunks[long_ids[3]].text.split("।")[1]
    fused = retrieve_records(question, 2, Context(retriever=retriever, k=2))
    added = retrieve_records(question, 2, Context(retriever=retriever, k=2, reranker="lexical",
                                                  rerank_add=1, rerank_weight=0.0))  # fmt: skip
    fused_hits = [r["chunk_id"] for r in fused if not r["is_padding"]]
    hits = [r for r in added if not r["is_padding"]]
    assert [r["chunk_id"] for r in hits[:2]] == fused_hits  # the fused top k, in fused order
    assert len(hits) == 3 and [r["rank"] for r in hits] == [1, 2, 3]
    assert hits[2]["chunk_id"] not in fused_hits
    assert hits[2]["score"] <= hits[1]["score"]  # its fused score: no rise down the list
    ranked = retrieve_records(question, 3, Context(retriever=retriever, k=3, reranker="lexical",
                                                   rerank_weight=0.0))  # fmt: skip
    best = [r["chunk_id"] for r in ranked if not r["is_padding"]]
    assert hits[2]["chunk_id"] == next(c for c in best if c not in fused_hits)


class Prefers:
    """A stand-in reranker that scores one passage text 1 and the rest 0."""

    id = "prefers"

    def __init__(self, text: str) -> None:
        self.text = text

    def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        return [float(text == self.text) for _, text in passages]


def test_rerank_add_never_takes_a_top_hits_padding_away(tiny_index: Path) -> None:
    """A break-it finding: the reranker's best was the chunk before a fused top hit, so it
    became a hit of its own and that top hit was read without its padding."""
    from kbqa.context_checks import Resources

    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    chunks = retriever.chunks
    long_ids = [c.chunk_id for c in chunks if c.doc_id == "long"]
    question = chunks[long_ids[3]].text.split("।")[1]
    fused = retrieve_records(question, 2, Context(retriever=retriever, k=2))
    padded = {r["chunk_id"] for r in fused if r["is_padding"]}
    top = next(r for r in fused if chunks[r["chunk_id"]].prev_chunk_id in padded)
    padding = chunks[top["chunk_id"]].prev_chunk_id
    ctx = Context(retriever=retriever, k=2, rerank_add=1, rerank_weight=0.0,
                  resources=Resources(reranker=Prefers(chunks[padding].text)))  # fmt: skip
    added = retrieve_records(question, 2, ctx)
    assert [r for r in added if r["rank"] <= 2] == [r for r in fused if r["rank"] <= 2]
    hits = [r for r in added if not r["is_padding"]]
    assert len(hits) == 3 and padding not in {r["chunk_id"] for r in hits}


def test_a_linked_adapter_is_the_file_it_links_to(tmp_path: Path) -> None:
    """A re-check's findings: ``adapter.gguf`` linked to the shipped reader, beside a manifest
    saying "reranker", was served as the reranker; linked bare to the shipped reranker, it was
    refused for having no manifest."""
    from kbqa.errors import ModelError
    from kbqa.llm.lora import shipped_adapter
    from kbqa.llm.rerank import load_llm_reranker, reranker_dir_problem

    lying = tmp_path / "lying"
    lying.mkdir()
    (lying / "adapter.gguf").symlink_to(shipped_adapter("gemma3-270m-reader") / "adapter.gguf")
    (lying / "manifest.json").write_text('{"role": "reranker", "base_model": "gemma3-270m"}')
    with pytest.raises(ModelError, match=r"is not a reranker: its adapter\.gguf is .*a reader's"):
        load_llm_reranker(lying)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "adapter.gguf").symlink_to(shipped_adapter("gemma3-270m-reranker") / "adapter.gguf")
    assert reranker_dir_problem(bare) is None
