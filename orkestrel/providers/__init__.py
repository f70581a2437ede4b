"""Concrete providers: real wire protocols and the scripted test double."""

from .anthropic import ANTHROPIC_THINKING_BUDGETS, AnthropicProvider
from .base import HttpProvider
from .ollama import OLLAMA_THINK_VALUES, OllamaProvider
from .openai import OPENAI_REASONING_EFFORTS, OpenAIProvider
from .scripted import ScriptedCall, ScriptedFallback, ScriptedProvider, ScriptedTurn, TurnInput

__all__ = [
    # Real wire protocols
    "ANTHROPIC_THINKING_BUDGETS",
    "OLLAMA_THINK_VALUES",
    "OPENAI_REASONING_EFFORTS",
    "AnthropicProvider",
    "HttpProvider",
    "OllamaProvider",
    "OpenAIProvider",
    # The scripted test double
    "ScriptedCall",
    "ScriptedFallback",
    "ScriptedProvider",
    "ScriptedTurn",
    "TurnInput",
]
