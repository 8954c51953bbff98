"""``python -m kbqa.cli``: the ``kbqa`` command."""

from kbqa.cli.app import main

main()
