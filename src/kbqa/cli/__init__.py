"""The ``kbqa`` command line, one module per command group, in pipeline order:

- ``index`` (:mod:`kbqa.cli.index`): clean, chunk and index a knowledge base;
- ``crawl`` (:mod:`kbqa.cli.crawl`): crawl a website into a knowledge base;
- ``ask`` (:mod:`kbqa.cli.ask`): answer one question;
- ``chat`` (:mod:`kbqa.cli.chat`): a conversation, streamed, with threads that persist
  (:mod:`kbqa.threads.sqlite`: their SQLite file and per-thread lock);
- ``serve`` (:mod:`kbqa.cli.serve`): the same conversation on a web page (:mod:`kbqa.serve`);
- ``eval run|report`` (:mod:`kbqa.cli.evaluate`): score the graph on a question file;
  ``eval generate`` (:mod:`kbqa.cli.generate`): draft one from an index;
- ``finetune reader|export|...`` (:mod:`kbqa.cli.finetune`): tune the reader.

The graph's settings become options of ``ask``, ``chat`` and ``eval run`` from one source,
:class:`~kbqa.context.Context` (:mod:`kbqa.cli.settings`).
"""

from kbqa.cli import ask, chat, crawl, evaluate, generate, index, serve  # noqa: F401  (each registers its command)
from kbqa.cli.app import app, fail, main
from kbqa.cli.finetune import finetune_app

app.add_typer(finetune_app, name="finetune")

__all__ = ["app", "fail", "main"]
