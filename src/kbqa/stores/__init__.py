"""Stores a kbqa index can be copied into and searched from: :mod:`~kbqa.stores.milvus`."""
