"""The two preprocessing strategies of HybridRAG-BN.

- **coverage** (its primary pipeline): light cleaning; only the recurring blocks at the top
  (header, first navigation block) and bottom (footer) of each page are removed; chunks of about
  800 characters with 150 of overlap.
- **precision** (its fallback pipeline): aggressive cleaning, every block that recurs across a
  site's pages removed; chunks of about 1000 characters with 150 of overlap.

Recurring blocks are learned from the corpus itself (:class:`~kbqa.corpus.boilerplate.
BoilerplateModel`), which needs one pass over the documents before the cleaning pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from kbqa.corpus.boilerplate import BoilerplateModel
from kbqa.corpus.document import Document


@dataclass(frozen=True)
class Strategy:
    """Cleaning and chunking settings of one strategy."""

    name: str
    chunk_size: int
    chunk_overlap: int


STRATEGIES = {  # the first is the primary pipeline, the default of a `both` index
    "coverage": Strategy("coverage", 800, 150),
    "precision": Strategy("precision", 1000, 150),
}


def get_strategy(name: str) -> Strategy:
    """The strategy called ``name``.

    Raises:
        ValueError: Unknown name (the message lists the known ones).
    """
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; use one of {', '.join(STRATEGIES)}") from None


def clean_documents(
    documents: Callable[[], Iterable[Document]],
    strategy: Strategy,
    model: BoilerplateModel | None = None,
) -> tuple[Iterator[Document], BoilerplateModel]:
    """Learn the recurring blocks from one pass over ``documents()``, then yield the documents
    of a second pass cleaned by ``strategy``.

    Args:
        documents: Returns a fresh iterable of the knowledge base each time it is called (the
            corpus is read twice rather than held in memory).
        strategy: ``coverage`` or ``precision``.
        model: Recurring blocks already learned from the same corpus (building both
            strategies learns them once); the first pass is then skipped.

    Returns:
        The cleaned documents (lazily) and the learned model, for reporting.
    """
    if model is None:
        model = BoilerplateModel.fit(documents())
    clean = model.precision_clean if strategy.name == "precision" else model.coverage_clean
    return (replace(doc, text=clean(doc)) for doc in documents()), model
