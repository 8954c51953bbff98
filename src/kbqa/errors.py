"""Errors kbqa raises for bad input. Each message names the offending file, line or value."""


class KBQAError(Exception):
    """Base class: a problem a user can fix (bad input, missing package, bad index)."""


class InputError(KBQAError):
    """A knowledge-base or question file cannot be read (not JSON, no text, not UTF-8, ...)."""


class IndexLoadError(KBQAError):
    """An index directory is missing, incomplete, corrupt or built with another embedder."""


class ModelError(KBQAError):
    """A model cannot be loaded: package missing, checksum mismatch, unknown name."""
