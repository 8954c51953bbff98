"""Embedded GGUF generators (llama.cpp) as LangChain chat models, plus deterministic fakes."""

from kbqa.llm.models import MODELS, ModelSpec, load_chat_model, resolve_model

__all__ = ["MODELS", "ModelSpec", "load_chat_model", "resolve_model"]
