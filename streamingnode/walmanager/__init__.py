"""WAL ownership per pchannel (the lifetime state machine, ARCHITECTURE §4.3)."""

from streamingnode.walmanager.lifetime import WALFactory, WALHook, WALLifetime
from streamingnode.walmanager.manager import WALManager, WALStatus
from streamingnode.walmanager.state import INITIAL, Step, WALState, next_step

__all__ = [
    "INITIAL",
    "Step",
    "WALFactory",
    "WALHook",
    "WALLifetime",
    "WALManager",
    "WALState",
    "WALStatus",
    "next_step",
]
