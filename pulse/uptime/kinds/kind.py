"""The entry each check kind ends its module with: what the configuration file offers for it, how
it is stored on the component row, how one check of it runs, and how `pulse check` names one."""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import Field, field_validator

from pulse.net import AddressPolicy
from pulse.spec import Strict
from pulse.uptime.check import CheckResult

#: The component columns some kind stores its target in, as a component of no kind leaves them.
#: A kind's `Kind.stored` starts from these, so a component that changes kind keeps nothing of
#: its previous one.
CLEARED: dict[str, Any] = {
    "url": None,
    "method": "GET",
    "headers": {},
    "forward_headers": False,
    "body": None,
    "target": None,
}


_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def host(value: str) -> str:
    """A host name (letters, digits, hyphens, dots) or an IP address, nothing else: no scheme,
    no port, no path."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    name = value.removesuffix(".")
    if not name or len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError("not a host name or an IP address (write the port in port, and no scheme)")
    return value


class Host(Strict):
    """The ``host`` field, for the kinds that reach one (a kind without a host says so in its
    `Kind.problems`)."""

    host: str | None = Field(None, max_length=253)

    @field_validator("host")
    @classmethod
    def _host(cls, value: str | None) -> str | None:
        return value if value is None else host(value)


class Address(Host):
    """The ``host`` and ``port`` fields, for the kinds that connect to one (a kind without a port
    says so in its `Kind.problems`)."""

    port: int | None = Field(None, ge=1, le=65535)


@dataclasses.dataclass(frozen=True)
class Stored:
    """A component row's target columns, as `pulse.uptime.record` loads them.

    Parameters:
      timeout_s: the check's timeout, in seconds.
      target: the ``target`` column (JSON), for the kinds that store their fields there.
    """

    method: str
    url: str | None
    headers: dict[str, str]
    forward_headers: bool
    body: str | None
    timeout_s: float
    target: dict[str, Any] | None


#: One check: the kind's target (as `Kind.target` made it), the condition texts, the extractions
#: (name: JSON path into the body) and the address policy, to a `CheckResult`. Never raises for
#: a network problem; pure of the database.
Run = Callable[[Any, Sequence[str], dict[str, str], AddressPolicy], CheckResult]


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of check.

    Parameters:
      name: as the configuration file's ``kind`` field and the ``component.kind`` column write it.
      fields: its fields in the configuration file, a part of `pulse.uptime.spec.ComponentSpec`
        (each validated there, refused with its place and reason).
      placeholders: the condition placeholders its checks resolve; a condition using another is
        refused at apply time, naming the kind.
      default_conditions: a component's conditions when the file gives none.
      problems: what is wrong with a component of this kind across its fields (a field missing…),
        one text each; called once each field is valid.
      stored: the component's columns for this kind, from its part of the file.
      target: what one check needs, from the row's `Stored` columns.
      run: one check.
      flag: the `pulse check` option that names a target of this kind (``--url``, ``--tcp``).
      command_line: the target of ``pulse check --<flag> VALUE``, from VALUE and the command's
        options (``timeout_s``, ``method``, ``headers``, ``send``, ``tls``, ``starttls``, ``ca``: the
        PEM text of ``--ca-file``'s certificates or None); ValueError for a bad one.
    """

    name: str
    fields: type[Strict]
    placeholders: frozenset[str]
    default_conditions: tuple[str, ...]
    problems: Callable[[Any], list[str]]
    stored: Callable[[Any], dict[str, Any]]
    target: Callable[[Stored], Any]
    run: Run
    flag: str
    command_line: Callable[[str, Mapping[str, Any]], Any]
