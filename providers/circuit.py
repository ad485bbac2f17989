"""A circuit breaker per provider endpoint (seed 000): skip a provider that keeps failing.

closed (calls pass) -> open when ``failure_threshold`` of the last ``window`` calls failed
(``allow()`` False for ``cooldown_s``) -> half_open (one probe passes: its success closes
the circuit, its failure opens it again). A probe that never reports back stops blocking
after ``cooldown_s``; outcomes reported while open are ignored. Keys name an endpoint
(``endpoint_key("openai", "http://host/v1")``). Pure but for a lock and the injectable
clock. The states drawn: docs/providers.md.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

State = Literal["closed", "open", "half_open"]


def endpoint_key(provider: str, base_url: str) -> str:
    return f"{provider}|{base_url.rstrip('/')}"


@dataclass
class _Circuit:
    outcomes: deque[bool]  # True = failure, newest last
    state: State = "closed"
    opened_at: float = 0.0
    probe_at: float | None = None  # when the half-open probe was let through


class CircuitBreaker:
    def __init__(
        self,
        failure_threshold: int = 5,
        window: int = 10,
        cooldown_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1 or window < failure_threshold:
            raise ValueError("need 1 <= failure_threshold <= window")
        if cooldown_s < 0:
            raise ValueError("cooldown_s must not be negative")
        self.failure_threshold = failure_threshold
        self.window = window
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._circuits: dict[str, _Circuit] = {}

    def allow(self, key: str) -> bool:
        """May a call go to this endpoint now? In half-open, True hands out the one probe."""
        with self._lock:
            circuit, now = self._get(key), self._clock()
            match self._state(circuit, now):
                case "closed":
                    return True
                case "open":
                    return False
                case "half_open":
                    if circuit.probe_at is not None and now - circuit.probe_at < self.cooldown_s:
                        return False
                    circuit.state, circuit.probe_at = "half_open", now
                    return True

    def record_success(self, key: str) -> None:
        with self._lock:
            circuit = self._get(key)
            if circuit.state == "half_open":
                self._circuits[key] = self._new()
            elif circuit.state == "closed":
                circuit.outcomes.append(False)

    def record_failure(self, key: str) -> None:
        with self._lock:
            circuit, now = self._get(key), self._clock()
            if circuit.state == "half_open":
                self._open(circuit, now)
            elif circuit.state == "closed":
                circuit.outcomes.append(True)
                if sum(circuit.outcomes) >= self.failure_threshold:
                    self._open(circuit, now)

    def state(self, key: str) -> State:
        """The state as ``allow`` would see it now (open turns half_open once cooled down)."""
        with self._lock:
            return self._state(self._get(key), self._clock())

    def retry_in(self, key: str) -> float:
        """Seconds until a call (or the probe) would be allowed; 0.0 if it would be now."""
        with self._lock:
            circuit, now = self._get(key), self._clock()
            match self._state(circuit, now):
                case "closed":
                    return 0.0
                case "open":
                    return max(0.0, circuit.opened_at + self.cooldown_s - now)
                case "half_open":
                    if circuit.probe_at is None:
                        return 0.0
                    return max(0.0, circuit.probe_at + self.cooldown_s - now)

    def _state(self, circuit: _Circuit, now: float) -> State:
        if circuit.state == "open" and now - circuit.opened_at >= self.cooldown_s:
            return "half_open"
        return circuit.state

    def _open(self, circuit: _Circuit, now: float) -> None:
        circuit.state, circuit.opened_at, circuit.probe_at = "open", now, None
        circuit.outcomes.clear()

    def _get(self, key: str) -> _Circuit:
        if key not in self._circuits:
            self._circuits[key] = self._new()
        return self._circuits[key]

    def _new(self) -> _Circuit:
        return _Circuit(outcomes=deque(maxlen=self.window))
