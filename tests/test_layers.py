"""The house's layers, read from the imports of ``src/kbqa`` (``ast``; nothing is imported):
nodes never import each other or the evaluation code, the answer logic never imports LangGraph
or the graph, evaluation stands above the graph, and no package imports in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "kbqa"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Modules ``path`` imports, anywhere in it (lazy imports inside functions count too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


MODULES = {module_name(p): imports(p) for p in PACKAGE.rglob("*.py")}


def under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if under(m, "kbqa.nodes")))
def test_a_node_imports_no_other_node_and_no_evaluation_code(module: str) -> None:
    nodes = {m for m in MODULES if under(m, "kbqa.nodes")} - {"kbqa.nodes", "kbqa.nodes.common"}
    if module == "kbqa.nodes":  # the package's face lists its nodes
        return
    assert not {i for i in MODULES[module] if i in nodes and i != module}
    assert not {i for i in MODULES[module] if under(i, "kbqa.evals")}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if under(m, "kbqa.answers")))
def test_the_answer_logic_imports_no_langgraph_and_no_graph(module: str) -> None:
    banned = (
        "langgraph",
        "kbqa.nodes",
        "kbqa.graph",
        "kbqa.routes",
        "kbqa.evals",
        "kbqa.resources",
    )
    assert not {i for i in MODULES[module] if any(under(i, b) for b in banned)}


def test_only_evaluation_finetuning_the_api_and_the_cli_stand_above_the_graph() -> None:
    above = ("kbqa.evals", "kbqa.finetune", "kbqa.api", "kbqa.cli", "kbqa.serve")
    users = {m for m, found in MODULES.items() if any(under(i, "kbqa.graph") for i in found)}
    assert users and all(any(under(m, a) for a in above) for m in users), users


def test_no_import_circles() -> None:
    known = set(MODULES)
    graph = {
        m: {i for i in found if i in known and i != m and not under(m, i)}
        for m, found in MODULES.items()
    }
    seen: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(m: str, path: list[str]) -> None:
        seen[m] = 1
        for n in sorted(graph[m]):
            assert seen.get(n) != 1, " -> ".join([*path, m, n])
            if n not in seen:
                visit(n, [*path, m])
        seen[m] = 2

    for m in sorted(graph):
        if m not in seen:
            visit(m, [])


def test_the_routes_read_state_and_settings_not_the_nodes() -> None:
    """Issue 35 item 5: routes.py imported kbqa.nodes.common (for context_of, now in
    kbqa.context): a route decides from the state and the settings alone."""
    assert not {i for i in MODULES["kbqa.routes"] if under(i, "kbqa.nodes")}


LAYERS: list[tuple[str, ...]] = [
    ("kbqa.errors", "kbqa.version", "kbqa.paths", "kbqa.text", "kbqa.interrupts"),
    ("kbqa.corpus", "kbqa.prompts", "kbqa.retrieval.tokenizer", "kbqa.retrieval.fusion"),
    ("kbqa.llm", "kbqa.tracing", "kbqa.state", "kbqa.retrieval.rerank"),
    ("kbqa.embedders", "kbqa.index", "kbqa.retrieval", "kbqa.stores", "kbqa.web_search"),
    ("kbqa.context", "kbqa.context_checks"),
    ("kbqa.answers", "kbqa.resources"),
    ("kbqa.passages",),
    ("kbqa.nodes",),
    ("kbqa.routes", "kbqa.graph"),
    ("kbqa.api", "kbqa.langchain_retriever", "kbqa.threads", "kbqa.serve"),
    ("kbqa.evals", "kbqa.finetune"),
    ("kbqa.cli",),
]
"""The house from the bottom up (issue 35 item 9): text, errors and interrupts; documents and
prompts; the LLM, the state's types and the parts of retrieval those need; embedders, the
on-disk index, stores and the retriever; the run's settings; the answer logic and the
resources built from the settings; the passages a question reads; the nodes; the graph; the
front doors; evaluation and fine-tuning; the command line. A module may import its own layer
and those below it."""


def layer_of(module: str) -> int:
    """The layer of ``module``: that of the longest package prefix that names one."""
    best = max(
        ((len(p), i) for i, layer in enumerate(LAYERS) for p in layer if under(module, p)),
        default=None,
    )
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[1]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "kbqa"))
def test_nothing_imports_upward(module: str) -> None:
    own = layer_of(module)
    known = {i for i in MODULES[module] if i in MODULES and i != "kbqa"}
    upward = {i: layer_of(i) for i in known if layer_of(i) > own}
    assert not upward, f"{module} (layer {own}) imports from above it: {upward}"


def test_finetuning_imports_no_node_and_serving_no_evaluation() -> None:
    """finetune builds its examples through kbqa.passages, as the nodes do, not through them;
    the code that serves a question (the graph and everything under it, the API, ``kbqa ask``
    and ``kbqa chat``) imports no evaluation code (tracing is a module of its own)."""
    finetune = {m for m in MODULES if under(m, "kbqa.finetune")}
    assert not {(m, i) for m in finetune for i in MODULES[m] if under(i, "kbqa.nodes")}
    serving = {m for m in MODULES if m != "kbqa" and layer_of(m) <= layer_of("kbqa.api")} | {
        "kbqa.cli.ask", "kbqa.cli.chat", "kbqa.cli.chat_commands", "kbqa.cli.serve",
    }  # fmt: skip
    assert not {(m, i) for m in serving for i in MODULES[m] if under(i, "kbqa.evals")}


def test_the_routes_import_only_the_state_and_the_settings() -> None:
    own = {i for i in MODULES["kbqa.routes"] if i in MODULES}
    assert own <= {"kbqa.state", "kbqa.context"}, own
