"""CircuitBreaker with a fake clock: opening, rejecting, the half-open probe, recovery."""

from __future__ import annotations

import threading

import pytest

from providers.circuit import CircuitBreaker, endpoint_key

KEY = endpoint_key("openai", "http://host/v1/")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def breaker(**kwargs: float) -> tuple[CircuitBreaker, FakeClock]:
    clock = FakeClock()
    settings = {"failure_threshold": 3, "window": 5, "cooldown_s": 30.0, **kwargs}
    return CircuitBreaker(clock=clock, **settings), clock  # type: ignore[arg-type]


def trip(b: CircuitBreaker, key: str = KEY) -> None:
    for _ in range(b.failure_threshold):
        b.record_failure(key)


def test_endpoint_key_names_provider_and_url():
    assert KEY == "openai|http://host/v1"


def test_new_endpoint_is_closed_and_allowed():
    b, _ = breaker()
    assert (b.state(KEY), b.allow(KEY), b.retry_in(KEY)) == ("closed", True, 0.0)


def test_circuit_opens_when_threshold_of_window_failed():
    b, _ = breaker()
    b.record_failure(KEY)
    b.record_success(KEY)
    b.record_failure(KEY)
    assert b.state(KEY) == "closed"
    b.record_failure(KEY)
    assert b.state(KEY) == "open"


def test_failures_that_slid_out_of_the_window_do_not_count():
    b, _ = breaker()
    b.record_failure(KEY)
    b.record_failure(KEY)
    for _ in range(5):
        b.record_success(KEY)  # the window of 5 now holds successes only
    b.record_failure(KEY)
    b.record_failure(KEY)
    assert b.state(KEY) == "closed"
    b.record_failure(KEY)
    assert b.state(KEY) == "open"


def test_open_circuit_rejects_until_the_cooldown_passed():
    b, clock = breaker()
    trip(b)
    assert b.allow(KEY) is False
    assert b.retry_in(KEY) == 30.0
    clock.now += 29.5
    assert (b.allow(KEY), b.retry_in(KEY)) == (False, 0.5)


def test_half_open_lets_exactly_one_probe_through():
    b, clock = breaker()
    trip(b)
    clock.now += 30
    assert b.state(KEY) == "half_open" and b.retry_in(KEY) == 0.0
    assert b.allow(KEY) is True
    assert [b.allow(KEY) for _ in range(3)] == [False, False, False]
    assert b.state(KEY) == "half_open"
    assert b.retry_in(KEY) == 30.0


def test_successful_probe_closes_the_circuit_with_a_fresh_history():
    b, clock = breaker()
    trip(b)
    clock.now += 30
    assert b.allow(KEY)
    b.record_success(KEY)
    assert (b.state(KEY), b.allow(KEY)) == ("closed", True)
    b.record_failure(KEY)
    b.record_failure(KEY)
    assert b.state(KEY) == "closed"  # the failures before opening were forgotten


def test_failed_probe_reopens_for_another_cooldown():
    b, clock = breaker()
    trip(b)
    clock.now += 30
    assert b.allow(KEY)
    clock.now += 5
    b.record_failure(KEY)
    assert (b.state(KEY), b.allow(KEY), b.retry_in(KEY)) == ("open", False, 30.0)
    clock.now += 30
    assert b.allow(KEY) is True


def test_a_probe_that_never_reports_back_stops_blocking_after_a_cooldown():
    b, clock = breaker()
    trip(b)
    clock.now += 30
    assert b.allow(KEY)
    clock.now += 29
    assert b.allow(KEY) is False
    clock.now += 1
    assert b.allow(KEY) is True


def test_outcomes_reported_while_open_are_ignored():
    b, clock = breaker()
    trip(b)
    b.record_success(KEY)
    assert b.state(KEY) == "open"
    clock.now += 20
    b.record_failure(KEY)  # a late failure does not extend the cooldown
    assert b.retry_in(KEY) == 10.0


def test_endpoints_are_tracked_separately():
    b, _ = breaker()
    other = endpoint_key("anthropic", "https://api.anthropic.com")
    trip(b)
    assert (b.allow(KEY), b.allow(other), b.state(other)) == (False, True, "closed")


@pytest.mark.parametrize("kwargs", [{"failure_threshold": 0}, {"failure_threshold": 6, "window": 5}, {"cooldown_s": -1}])
def test_breaker_rejects_impossible_settings(kwargs: dict[str, float]):
    with pytest.raises(ValueError):
        breaker(**kwargs)


def test_only_one_of_many_threads_gets_the_probe():
    b, clock = breaker()
    trip(b)
    clock.now += 30
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def probe() -> None:
        barrier.wait()
        results.append(b.allow(KEY))

    threads = [threading.Thread(target=probe) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert sorted(results) == [False] * 7 + [True]
