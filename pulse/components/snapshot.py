"""What a change of status needs of its component (`Snapshot`), and the columns it is read from
(`COLUMNS`), with the component's row locked: shared by what observes a component (uptime checks)
and what changes it (`pulse.components.changes`, `pulse.components.incidents`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pulse.components.status import State, transition


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What a status change needs of its component, read with the component's row locked."""

    id: int
    organization_id: int
    key: str
    name: str
    auto_incident: bool
    state: State
    failure_threshold: int
    success_threshold: int
    in_maintenance: bool

    @classmethod
    def of(cls, row: Sequence[Any], *, failure_threshold: int, success_threshold: int) -> Snapshot:
        """A snapshot of the values `COLUMNS` reads, judged by these thresholds."""
        cid, organization_id, key, name, auto_incident, current, failures, successes, in_maintenance = row
        return cls(
            id=cid,
            organization_id=organization_id,
            key=key,
            name=name,
            auto_incident=auto_incident,
            state=State(current, failures, successes),
            failure_threshold=failure_threshold,
            success_threshold=success_threshold,
            in_maintenance=in_maintenance,
        )

    def after(self, seen: str) -> State:
        """The state one more observation of ``seen`` leads to."""
        return transition(
            self.state,
            seen,
            failure_threshold=self.failure_threshold,
            success_threshold=self.success_threshold,
            in_maintenance=self.in_maintenance,
        )


#: What a `Snapshot` reads of component ``c`` (in maintenance at ``%(now)s``), in `Snapshot.of`'s order.
COLUMNS = """c.id, c.organization_id, c.key, c.name, c.auto_incident, c.status, c.consecutive_failures,
       c.consecutive_successes,
       EXISTS (SELECT 1 FROM maintenance_window m
               WHERE m.component_id = c.id AND m.starts_at <= %(now)s AND m.ends_at > %(now)s)"""
