"""Concrete providers: real wire protocols and the scripted test double."""

from .scripted import ScriptedCall, ScriptedFallback, ScriptedProvider, ScriptedTurn, TurnInput

__all__ = [
    # The scripted test double
    "ScriptedCall",
    "ScriptedFallback",
    "ScriptedProvider",
    "ScriptedTurn",
    "TurnInput",
]
