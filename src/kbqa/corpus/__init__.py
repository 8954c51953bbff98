"""Knowledge-base ingestion: load documents, clean them, split them into chunks."""

from kbqa.corpus.chunking import Chunk, chunk_document, split_sentences
from kbqa.corpus.loaders import Document, load_documents

__all__ = ["Chunk", "Document", "chunk_document", "load_documents", "split_sentences"]
