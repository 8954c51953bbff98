"""Knowledge-base ingestion: load documents, clean them, split them into chunks."""

from kbqa.corpus.chunking import Chunk, chunk_document, split_sentences
from kbqa.corpus.document import Document
from kbqa.corpus.loaders import load_documents

__all__ = ["Chunk", "Document", "chunk_document", "load_documents", "split_sentences"]
