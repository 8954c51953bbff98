"""Issue 35 item 8: the drawings of the graph agree with the graph. docs/graph.md draws every
edge the compiled graph has, and the README's smaller drawing only edges it has."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from kbqa.graph import graph

ROOT = Path(__file__).resolve().parent.parent
ARROW = re.compile(r"\s*(?:-->|--[^-]+-->|-\.[^.]+\.->)\s*")
NAMES = {"START": "__start__", "END": "__end__"}


def mermaid_edges(markdown: str) -> set[tuple[str, str]]:
    """The ``(source, target)`` pairs of the first mermaid block (chains ``a --> b --> c`` and
    labelled arrows ``a -- x --> b``, ``a -. x .-> b`` included)."""
    block = re.search(r"```mermaid\n(.*?)```", markdown, re.S)
    assert block, "no mermaid block"
    edges: set[tuple[str, str]] = set()
    for line in block.group(1).splitlines()[1:]:
        nodes = [re.sub(r"\(.*\)$", "", n.strip().rstrip(";")) for n in ARROW.split(line)]
        nodes = [NAMES.get(n, n) for n in nodes if n]
        edges |= set(itertools.pairwise(nodes))
    return edges


def graph_edges() -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in graph.get_graph().edges}


def test_the_graph_page_draws_every_edge_of_the_graph() -> None:
    drawn = mermaid_edges((ROOT / "docs" / "graph.md").read_text("utf-8"))
    assert drawn == graph_edges()


def test_the_readme_draws_only_edges_the_graph_has() -> None:
    drawn = mermaid_edges((ROOT / "README.md").read_text("utf-8"))
    assert drawn <= graph_edges() and len(drawn) >= 15
