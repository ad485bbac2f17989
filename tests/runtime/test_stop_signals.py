"""A worker's stop signals reach it once each: a supervised child's early ones, and every later
one, however the moment a signal arrives falls against the handlers changing hands."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import pytest

from runtime.processes import routed_stops

TURNS = 5  # loop iterations for a signal already delivered to reach ``stop`` by any path


@pytest.fixture(autouse=True)
def _handlers_restored() -> Iterator[None]:
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


async def _turns() -> None:
    for _ in range(TURNS):
        await asyncio.sleep(0)


async def test_a_signal_arriving_while_the_handlers_change_hands_is_one_stop(monkeypatch):
    """The SIGTERM lands after the wakeup fd is set and before the Python handler is replaced,
    the moment a child's early handler and the loop both saw it (and the worker exited 130)."""
    early: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: early.append(signum))  # a child's first handler
    set_wakeup_fd = signal.set_wakeup_fd

    sent: list[int] = []

    def then_a_signal(fd: int, **kwargs) -> int:
        previous = set_wakeup_fd(fd, **kwargs)
        if fd != -1 and not sent:  # once, right after the wakeup fd is first set
            sent.append(signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
        return previous

    monkeypatch.setattr(signal, "set_wakeup_fd", then_a_signal)
    stops: list[str] = []
    with routed_stops(asyncio.get_running_loop(), stops.append, early):
        await _turns()
    assert early == [signal.SIGTERM] and stops == ["SIGTERM"]


async def test_each_later_signal_is_one_stop_and_python_s_handlers_are_back_after():
    stops: list[str] = []
    with routed_stops(asyncio.get_running_loop(), stops.append, [signal.SIGINT]):
        assert stops == ["SIGINT"]  # noted before the worker could act: acted on at once
        os.kill(os.getpid(), signal.SIGTERM)
        await _turns()
        assert stops == ["SIGINT", "SIGTERM"]
        os.kill(os.getpid(), signal.SIGTERM)
        await _turns()
        assert stops == ["SIGINT", "SIGTERM", "SIGTERM"]  # a second signal is the worker's "exit now"
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.set_wakeup_fd(-1) == -1
