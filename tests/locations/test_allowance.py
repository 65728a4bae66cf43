import logging

from pulse.locations.allowance import MINUTE_S, Allowance


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_location_past_its_allowance_is_dropped_and_told_of_once_a_minute(caplog):
    clock = Clock()
    allowance = Allowance(per_minute=100, clock=clock)
    caplog.set_level(logging.WARNING, "pulse.locations.allowance")

    assert allowance.admit("eu", 64) and allowance.admit("eu", 36)
    assert not allowance.admit("eu", 1)  # past its 100 this minute
    assert not allowance.admit("eu", 64)
    assert allowance.admit("us", 100)  # each location counts alone
    allowance.unsent("us", 3)
    assert caplog.messages == []  # told once the minute is over

    clock.now += MINUTE_S
    assert allowance.admit("eu", 100)  # a new minute

    assert caplog.messages == [
        "Location eu: 65 of its results dropped in the last minute: 65 past its allowance of 100 a minute "
        "(PULSE_LOCATION_RESULTS_PER_MINUTE), 0 for slots not sent to it, answered already or past their time. "
        "Its slots are decided without them.",
        "Location us: 3 of its results dropped in the last minute: 0 past its allowance of 100 a minute "
        "(PULSE_LOCATION_RESULTS_PER_MINUTE), 3 for slots not sent to it, answered already or past their time. "
        "Its slots are decided without them.",
    ]
    clock.now += MINUTE_S
    assert allowance.admit("eu", 1)
    assert len(caplog.messages) == 2  # nothing dropped in that minute: nothing told
