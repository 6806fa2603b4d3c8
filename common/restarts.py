"""When to start a child process again after it exited: a backoff that forgives a stable run.

The first exit is restarted at once; while the child keeps exiting soon after
a start, each restart waits twice as long as the one before (0.5 s up to 8 s);
after ``stable_seconds`` of running, the next exit is restarted at once again.
Decision logic only: the caller owns the process and the clock.
"""

from __future__ import annotations

from dataclasses import dataclass

BACKOFF_INITIAL_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 8.0
STABLE_SECONDS = 30.0


@dataclass(slots=True)
class RestartBackoff:
    initial: float = BACKOFF_INITIAL_SECONDS
    maximum: float = BACKOFF_MAX_SECONDS
    stable_seconds: float = STABLE_SECONDS
    _delay: float = 0.0
    _started_at: float = 0.0
    restarts: int = 0

    def started(self, now: float) -> None:
        """The child was started (first start or a restart) at ``now``."""
        self._started_at = now

    def exited(self, now: float) -> float:
        """The child exited at ``now``: the time to start it again."""
        if now - self._started_at >= self.stable_seconds:
            self._delay = 0.0
        at = now + self._delay
        self._delay = min(max(self._delay * 2, self.initial), self.maximum)
        self.restarts += 1
        return at
