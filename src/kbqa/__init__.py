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
- ``cli``: the ``kbqa`` command.
"""

from kbqa.version import __version__

__all__ = ["__version__"]
