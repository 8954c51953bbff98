"""Stopping a generation from outside: ``kbqa chat`` sets :data:`CANCEL` on Ctrl-C, and the
streaming reader (:func:`kbqa.answers.reading.stream_until_abstention`) stops at its next token,
so the interrupted answer ends at once instead of running to its token budget."""

from __future__ import annotations

import threading

CANCEL = threading.Event()
"""Set: stop the generation under way (the caller clears it before the next question)."""
