"""LLM access: one OpenAI-compatible gateway, the embedded llama.cpp server, the cache."""

from .gateway import ChatRequest, Completion, Gateway, open_gateway

__all__ = ["ChatRequest", "Completion", "Gateway", "open_gateway"]
