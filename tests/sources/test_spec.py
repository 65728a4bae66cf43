"""Alert sources in the configuration file: what is refused, named by its path, and what apply
writes (the token's digest, never the token; the routes with the source's own policy last)."""

import pytest

from pulse import configfile
from pulse.errors import ConfigError
from pulse.inbound.tokens import digest
from pulse.models import AlertSource
from tests.sources.conftest import EVENTS_TOKEN, FILE


def test_apply_keeps_the_tokens_digest_and_the_routes(sources):
    app = AlertSource.get(AlertSource.key == "app")
    assert (app.kind, bytes(app.token_sha256)) == ("events", digest(EVENTS_TOKEN))
    assert app.routes == [{"match": {"group": "database"}, "policy": "dba"}, {"match": {}, "policy": "default"}]
    assert EVENTS_TOKEN.encode() not in b"".join(bytes(s.token_sha256) for s in AlertSource.select())


def test_pruning_deletes_a_source_the_file_no_longer_names(sources):
    text = FILE.replace(
        '      - {key: grafana, name: Grafana, kind: grafana, token: "${GRAFANA_TOKEN}", escalation_policy: default}\n',
        "",
    )
    report = configfile.apply(configfile.load(text), prune=True)
    assert report.alert_sources_deleted == 1
    assert sorted(s.key for s in AlertSource.select()) == ["app", "prometheus"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (("escalation_policy: dba}", "escalation_policy: nobody}"),
         "alert_sources[0].routes[0].escalation_policy names 'nobody', which is not in escalation_policies"),
        (("kind: grafana", "kind: loki"),
         "alert_sources[2].kind: Input should be 'events', 'alertmanager' or 'grafana'"),
        (('"${GRAFANA_TOKEN}"', "short"), "alert_sources[2].token: a token is 32 to 128 letters, digits, '-' or '_'"),
        (("${GRAFANA_TOKEN}", "${EVENTS_TOKEN}"), "two alert sources have the same token"),
        (("key: prometheus", "key: app"), "alert_sources: alert source key 'app' appears twice"),
    ],
)  # fmt: skip
def test_a_bad_source_is_refused_and_named(sources, change, problem):
    with pytest.raises(ConfigError) as raised:
        configfile.load(FILE.replace(*change))
    assert problem in str(raised.value)
    assert "e" * 32 not in str(raised.value)
