"""Where a chat's threads persist: :mod:`~kbqa.threads.sqlite` (the default, one file) and
:mod:`~kbqa.threads.postgres` (``--db postgresql://...``)."""
