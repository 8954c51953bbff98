"""Hybrid retrieval over a built index (:mod:`kbqa.index`): the tokenizer, BM25 (bm25s) and an
optional dense part (:mod:`kbqa.embedders`) fused by weight (:mod:`~kbqa.retrieval.fusion`,
:mod:`~kbqa.retrieval.retriever`), and the rerank of the fused pool
(:mod:`~kbqa.retrieval.rerank`). The package imports nothing itself, so the tokenizer can be
used below it (by the index and the test embedder) without loading the retriever."""
