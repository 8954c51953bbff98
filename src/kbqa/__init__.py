"""kbqa: knowledge-base question answering as a LangGraph state machine.

The pipeline reads top to bottom like the package: ``corpus`` (load, clean, chunk) ->
``retrieval`` (BM25 + dense index, weighted fusion) -> ``nodes`` wired in ``graph`` (classify,
retrieve, generate, check_abstention, retry, finalize) -> ``evals`` (EM, token F1, recall@k).
"""

__version__ = "0.1.0"
