from core.loop_detect import LoopDetector, call_signature


def test_signature_ignores_argument_order_but_not_values():
    assert call_signature("file", {"a": 1, "b": 2}) == call_signature("file", {"b": 2, "a": 1})
    assert call_signature("file", {"a": 1}) != call_signature("file", {"a": 2})
    assert call_signature("file", {"a": 1}) != call_signature("shell", {"a": 1})


def test_loop_is_flagged_on_the_sixth_identical_call():
    detector = LoopDetector()
    flags = [detector.record("file", {"action": "read", "path": "x"}) for _ in range(6)]
    assert flags == [False] * 5 + [True]


def test_different_calls_in_between_do_not_reset_the_window_count():
    detector = LoopDetector(window=20)
    flagged = []
    for i in range(6):
        detector.record("shell", {"command": f"echo {i}"})
        flagged.append(detector.record("file", {"action": "list"}))
    assert flagged[-1] is True and not any(flagged[:-1])


def test_calls_that_fall_out_of_the_window_are_forgotten():
    detector = LoopDetector(window=6, threshold=5)
    for _ in range(5):
        assert not detector.record("file", {"p": 1})
    for i in range(5):
        detector.record("shell", {"i": i})
    assert not detector.record("file", {"p": 1})


def test_detector_state_can_be_carried_over():
    detector = LoopDetector()
    for _ in range(5):
        detector.record("file", {"p": 1})
    carried = LoopDetector(detector.recent)
    assert carried.record("file", {"p": 1}) is True
