import dataclasses
import logging
import socket

import pytest

from pulse.components.status import MAJOR_OUTAGE
from pulse.config import Settings, get_settings, parse_canaries
from pulse.errors import ConfigError
from pulse.locations import canaries, here, wire
from pulse.models import utcnow
from pulse.uptime.kinds import Stored
from tests.support.worker import free_port


@pytest.fixture
def listening():
    """A loopback port that accepts connections: a canary that answers."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield f"127.0.0.1:{server.getsockname()[1]}"


def closed() -> str:
    return f"127.0.0.1:{free_port()}"  # nothing listens: refused


def test_canaries_are_host_port_items():
    assert parse_canaries(" 1.1.1.1:53, example.com:443,[2606:4700::1111]:443 ") == (
        ("1.1.1.1", 53),
        ("example.com", 443),
        ("2606:4700::1111", 443),
    )
    with pytest.raises(ConfigError, match=r"PULSE_LOCATION_CANARIES: 'example\.com' is not host:port"):
        Settings.from_env({"PULSE_LOCATION_CANARIES": "1.1.1.1:53,example.com"})


def test_one_canary_answering_is_enough(listening):
    assert canaries.Egress(parse_canaries(f"{closed()},{listening}"), "eu").ok()


def test_a_location_whose_canaries_are_all_silent_says_so_once(caplog):
    egress = canaries.Egress(parse_canaries(f"{closed()},{closed()}"), "eu")

    with caplog.at_level(logging.INFO, logger="pulse.locations.canaries"):
        assert not egress.ok()
        assert not egress.ok()  # kept: asked once

    [line] = caplog.messages
    assert line.startswith("Location eu cannot reach the internet: none of its canaries")


def batch_for(target, settings):
    stored = Stored("GET", target.url("/missing"), {}, False, None, 2.0, None)
    check = wire.Check(1, utcnow().replace(microsecond=0), "http", stored, ["[STATUS] == 200"])
    return wire.seal(wire.Batch(wire.nonce(), [check]), settings.location_key)


@pytest.mark.parametrize(("answering", "abstained"), [(True, False), (False, True)])
def test_a_failed_check_abstains_only_when_no_canary_answers(target, listening, answering, abstained):
    secret = get_settings().locations_secret
    settings = dataclasses.replace(
        get_settings(),
        location="eu",
        location_key=wire.key(secret, "eu"),
        location_canaries=listening if answering else closed(),
    )

    _, [result] = here.check(batch_for(target, settings), settings)

    assert (result.seen, result.abstained) == (MAJOR_OUTAGE, abstained)
