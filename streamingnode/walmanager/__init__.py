"""WAL ownership per pchannel (the lifetime state machine)."""
