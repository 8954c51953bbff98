"""kbqa: knowledge-base question answering as a LangGraph state machine.

The package reads like the pipeline, top to bottom:

- ``corpus``: load a knowledge base (a crawled site, a Wikipedia dump, a folder or JSONL of
  documents), clean and chunk it;
- ``retrieval``: the index (BM25 + optional dense vectors) and the hybrid retriever (weighted
  fusion, previous-chunk padding), plus the web search stand-ins;
- ``llm`` and ``prompts``: the GGUF reader through llama.cpp, its LoRA adapter, grounded decoding,
  and the prompts it reads;
- ``answers``: the answer logic, free of LangGraph (question language and type, abstention,
  clean-up, snapping to the context, the pattern extractor, the cross-check's rules);
- ``nodes`` (one module per node: classify, retrieve, generate, check_abstention, retry,
  cross_check, verify, fallback, web_search, extract, finalize), ``routes`` (the conditional
  edges) and ``graph`` (the wiring);
- ``evals``: metrics, datasets, the evaluation runner and its report, above the graph;
- ``finetune``: ``kbqa finetune`` (LoRA training of the reader on a CPU, export to GGUF);
- ``api``: the Python API (``from kbqa import KBQA``);
- ``cli``: the ``kbqa`` command.
"""

from typing import TYPE_CHECKING, Any

from kbqa.version import __version__

if TYPE_CHECKING:
    from kbqa.api import KBQA, Answer, Citation

__all__ = ["KBQA", "Answer", "Citation", "__version__"]


def __getattr__(name: str) -> Any:
    """``from kbqa import KBQA`` without importing LangGraph for ``import kbqa`` alone."""
    if name in ("KBQA", "Answer", "Citation"):
        from kbqa import api

        return getattr(api, name)
    raise AttributeError(f"module 'kbqa' has no attribute {name!r}")
