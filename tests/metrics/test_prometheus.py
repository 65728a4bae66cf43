"""The Prometheus integration against a real Prometheus server: values, aggregations, no data, errors."""

import pytest

from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.net import AddressPolicy
from pulse.net.api import ApiError
from tests.support.target import closed_port

PROMETHEUS = INTEGRATIONS["prometheus"]


def query(prometheus, text, **options):
    return PROMETHEUS.query({"url": prometheus.url}, text, options, AddressPolicy(), 5)


def test_one_series_gives_its_value(prometheus):
    assert query(prometheus, "pulse_test_latency_ms") == Sample(120.0)


def test_a_scalar_gives_its_value(prometheus):
    assert query(prometheus, "scalar(pulse_test_latency_ms) * 2") == Sample(240.0)


@pytest.mark.parametrize(
    ("aggregate", "value"), [("first", None), ("sum", 300.0), ("avg", 100.0), ("min", 0.0), ("max", 220.0)]
)
def test_several_series_need_a_rule_to_make_one_value(prometheus, aggregate, value):
    prometheus.set("pulse_test_latency_ms", a=80, b=220, c=0)

    sample = query(prometheus, "pulse_test_latency_ms", aggregate=aggregate)

    assert sample.note == f"{aggregate} of 3 series"
    if value is not None:
        assert sample.value == value
    else:
        assert sample.value in (80.0, 220.0, 0.0)


def test_several_series_without_a_rule_are_refused_naming_how_many(prometheus):
    prometheus.set("pulse_test_latency_ms", a=80, b=220)

    with pytest.raises(ApiError) as refused:
        query(prometheus, "pulse_test_latency_ms")

    assert refused.value.permanent
    assert "the query returned 2 series: choose how to make one value of them with `aggregate:" in str(refused.value)


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("pulse_no_such_metric", "the query returned no series"),
        ("pulse_test_latency_ms * 0 / 0", "the value is NaN"),
        ("pulse_test_latency_ms / 0", "the value is +Inf"),
        ("-pulse_test_latency_ms / 0", "the value is -Inf"),
    ],
)
def test_no_series_nan_and_infinities_are_no_data(prometheus, text, note):
    assert query(prometheus, text) == Sample(None, note)


def test_a_bad_query_is_a_permanent_failure_with_prometheus_reason(prometheus):
    with pytest.raises(ApiError) as refused:
        query(prometheus, "sum(")

    assert refused.value.permanent and refused.value.status == 400
    assert str(refused.value).startswith("Prometheus answered 400: ") and "parse error" in str(refused.value)


def test_a_range_vector_is_refused(prometheus):
    with pytest.raises(ApiError, match="the query gives a matrix; it must give a vector or a scalar") as refused:
        query(prometheus, "pulse_test_latency_ms[1m]")
    assert refused.value.permanent


def test_a_prometheus_that_does_not_answer_is_worth_retrying():
    with pytest.raises(ApiError) as failed:
        PROMETHEUS.query({"url": f"http://127.0.0.1:{closed_port()}"}, "up", {}, AddressPolicy(), 2)

    assert not failed.value.permanent and "connection refused" in str(failed.value)
