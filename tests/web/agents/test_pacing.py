"""The pacer alone: a pure credit bucket with a least gap, driven by a given clock."""

from agents.runs.pacing import Pacer
from agents.runs.timings import RunTimings

# A one-second tick makes the refill between frames a few milliseconds apart negligible.
TIMINGS = RunTimings(tick=1.0, burst=3, gap=0.005, refill=1.0)


def test_a_burst_goes_out_at_once_then_one_frame_per_tick():
    pacer = Pacer(TIMINGS, now=0.0)
    now = 0.0
    for _ in range(3):
        now += 0.006  # just past the gap
        assert pacer.delay(now) == 0
        pacer.sent(now)
    # Credit spent: the next frame waits for about one tick's refill.
    wait = pacer.delay(now)
    assert 0.97 < wait <= 1.0
    pacer.sent(now + wait)
    assert pacer.delay(now + wait) > 0.97


def test_frames_keep_the_gap_even_with_credit_left():
    pacer = Pacer(TIMINGS, now=0.0)
    pacer.sent(1.0)
    assert abs(pacer.delay(1.001) - 0.004) < 1e-9
    assert pacer.delay(1.005) == 0


def test_a_quiet_spell_refills_to_the_burst_and_no_further():
    pacer = Pacer(TIMINGS, now=0.0)
    for at in (0.01, 0.02, 0.03):
        pacer.sent(at)
    later = 10.0
    for step in range(3):
        assert pacer.delay(later + step * 0.006) == 0
        pacer.sent(later + step * 0.006)
    assert pacer.delay(later + 0.018) > 0.9
