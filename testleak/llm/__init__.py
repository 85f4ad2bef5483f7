"""LLM access: one OpenAI-compatible gateway, the embedded llama.cpp server, the cache."""

from .gateway import Gateway, open_gateway
from .records import ChatRequest, Completion

__all__ = ["ChatRequest", "Completion", "Gateway", "open_gateway"]
