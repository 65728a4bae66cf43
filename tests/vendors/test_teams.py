"""The fake Teams answers like a Workflows webhook: Adaptive Cards accepted, what it refuses, its throttling."""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests
from py_vapid import Vapid

from tests.support.vendors import Vendors
from tests.vendors import CARD, sender


def test_teams_accepts_an_adaptive_card(unlimited: Vendors) -> None:
    workflow = unlimited.teams_workflow()
    assert "api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=" in workflow
    response = requests.post(workflow, json=CARD, timeout=5)
    assert (response.status_code, response.content) == (202, b"")
    [received] = unlimited.received("teams")
    assert received.json == CARD
    assert received.query["sp"] == "/triggers/manual/run"
    assert f"/workflows/{received.destination}/" in workflow


def attachment(**fields: Any) -> dict[str, Any]:
    """A Teams message whose attachment has ``fields`` replaced."""
    return {"type": "message", "attachments": [{**CARD["attachments"][0], **fields}]}


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"sig": "forged"}, 401),
        ({"workflow": "0" * 32}, 401),
        ({"payload": {**CARD, "type": "MessageCard"}}, 400),
        ({"payload": attachment(contentType="application/vnd.microsoft.teams.card.o365connector")}, 400),
        ({"payload": attachment(content={"type": "AdaptiveCard"})}, 400),
        ({"payload": attachment(content={"type": "MessageCard", "body": []})}, 400),
        ({"payload": {"type": "message", "attachments": []}}, 400),
        ({"payload": {**CARD, "padding": "x" * 28 * 1024}}, 413),
    ],
)
def test_teams_refuses(unlimited: Vendors, change: dict[str, Any], status: int) -> None:
    workflow = unlimited.teams_workflow()
    if "sig" in change:
        workflow = re.sub(r"sig=[^&]+", f"sig={change['sig']}", workflow)
    if "workflow" in change:
        workflow = re.sub(r"/workflows/[^/]+/", f"/workflows/{change['workflow']}/", workflow)
    response = requests.post(workflow, json=change.get("payload", CARD), timeout=5)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] and error["message"]
    assert unlimited.received("teams") == []


def test_teams_rate_limit_is_four_a_second_per_workflow(vendors: Vendors, vapid: Vapid) -> None:
    send = sender(vendors, "teams", vapid)
    answers = [send(timeout=5) for _ in range(5)]
    assert [a.status_code for a in answers] == [202] * 4 + [429]
    assert answers[-1].headers["Retry-After"] == "1"
    assert answers[-1].json()["error"]["code"] == "WorkflowRequestsThrottled"
