"""Alert sources: what sends alerts in to be paged through on call. A source is an events API
client, an Alertmanager or a Grafana (`formats`), declared in the configuration file (`spec`) with
its token and its routes to escalation policies (and, for a Grafana, the secret its requests are
signed with: `signature`). `pulse serve` records each event in one statement (`record`, `routes`);
the claim-and-send loop (`due`) hands a source's waiting events to a worker, which applies them in
order to the source's alerts (`apply`)."""
