"""Fixtures of the tests of the vendor fakes: the fakes, the fakes without rate limits, a VAPID key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from py_vapid import Vapid

from tests.support.vendors import VENDORS, Vendors


@pytest.fixture
def vendors() -> Iterator[Vendors]:
    with Vendors() as fakes:
        yield fakes


@pytest.fixture
def unlimited(vendors: Vendors) -> Vendors:
    """The fakes without rate limits, for tests that send several requests to one destination."""
    for vendor in VENDORS:
        vendors.limit(vendor, 0, 0)
    return vendors


@pytest.fixture(scope="module")
def vapid() -> Vapid:
    key = Vapid()
    key.generate_keys()
    return key
