"""`pulse apply -f FILE.yaml`: organizations, their components, notification channels and
subscribers (see `pulse.subscriptions`), declared in a file.

Validation is whole-file: every problem is reported with its path, field and reason, and nothing
is written unless the file is valid. ``${NAME}`` in any text is replaced by the environment
variable NAME (for secrets: webhook URLs, signing secrets), which must be set. Applying is
idempotent (upsert by slug, key or address) and happens in one transaction; ``prune`` also
deletes what the file no longer names.
"""

from __future__ import annotations

import dataclasses
import os
import re
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from pulse import conditions, subscriptions
from pulse.db import db
from pulse.errors import ConfigError
from pulse.models import Component, ExtractedValue, MaintenanceWindow, Organization, utcnow
from pulse.progress import Advance, nothing

MAX_FILE_BYTES = 5 * 1024 * 1024
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_DURATION = re.compile(r"(\d+)(ms|s|m|h)")
_SLUG = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")


def parse_duration(value: Any) -> timedelta:
    """``30s``, ``5m``, ``1h30m``, ``500ms``, or a number of seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30s, 5m or 1h")
    if isinstance(value, int | float):
        return timedelta(seconds=value)
    text = str(value).strip()
    if not text or _DURATION.sub("", text):
        raise ValueError(f"{text!r} is not a duration (use e.g. 30s, 5m, 1h30m)")
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return timedelta(seconds=sum(int(n) * units[unit] for n, unit in _DURATION.findall(text)))


def _within(low: timedelta, high: timedelta) -> Any:
    def check(value: timedelta) -> timedelta:
        if not low <= value <= high:
            raise ValueError(f"must be between {_show(low)} and {_show(high)}, not {_show(value)}")
        return value

    return check


def _show(value: timedelta) -> str:
    seconds = value.total_seconds()
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


Interval = Annotated[
    timedelta, BeforeValidator(parse_duration), AfterValidator(_within(timedelta(seconds=15), timedelta(hours=24)))
]
Timeout = Annotated[
    timedelta, BeforeValidator(parse_duration), AfterValidator(_within(timedelta(seconds=1), timedelta(seconds=60)))
]
Slug = Annotated[str, Field(pattern=_SLUG)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class Maintenance(_Strict):
    start: datetime
    end: datetime
    title: str = Field("", max_length=200)

    @model_validator(mode="after")
    def _ordered(self) -> Maintenance:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError("start and end need a time zone, e.g. 2026-12-01T02:00:00Z")
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


class ComponentSpec(_Strict):
    key: Slug
    name: str = Field(min_length=1, max_length=200)
    type: Literal["endpoint", "metric", "service"] = "endpoint"
    url: str | None = Field(None, max_length=2048)
    method: str = "GET"
    headers: dict[str, str] = Field(default_factory=dict, max_length=50)
    body: str | None = Field(None, max_length=65536)
    interval: Interval = timedelta(seconds=60)
    timeout: Timeout = timedelta(seconds=10)
    conditions: list[str] = Field(default_factory=lambda: ["[STATUS] < 400"], min_length=1, max_length=20)
    failure_threshold: int = Field(3, ge=1, le=100)
    success_threshold: int = Field(2, ge=1, le=100)
    auto_incident: bool = True
    paused: bool = False
    extract: dict[str, str] = Field(default_factory=dict, max_length=20)
    maintenance: list[Maintenance] = Field(default_factory=list, max_length=100)

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str:
        if value.upper() not in METHODS:
            raise ValueError(f"{value!r} is not one of {', '.join(METHODS)}")
        return value.upper()

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return value if value is None else subscriptions.http_url(value)

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, header in value.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid header name")
            if "\r" in header or "\n" in header or len(header) > 8192:
                raise ValueError(f"the value of {name} has a line break or is over 8192 characters")
        return value

    @field_validator("conditions")
    @classmethod
    def _conditions(cls, value: list[str]) -> list[str]:
        for text in value:
            conditions.parse(text)  # ConditionError is a ValueError: it names the condition and the reason
        return value

    @field_validator("extract")
    @classmethod
    def _extract(cls, value: dict[str, str]) -> dict[str, str]:
        for name, path in value.items():
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", name):
                raise ValueError(f"{name!r} is not a valid value name (letters, digits, underscores)")
            conditions.parse_path(path)
        return value

    @model_validator(mode="after")
    def _endpoint(self) -> ComponentSpec:
        if self.type == "endpoint" and not self.url:
            raise ValueError("an endpoint needs a url")
        return self


class OrganizationSpec(_Strict):
    slug: Slug
    name: str = Field(min_length=1, max_length=200)
    components: list[ComponentSpec] = Field(default_factory=list, max_length=50_000)
    channels: list[subscriptions.ChannelSpec] = Field(default_factory=list, max_length=1000)
    subscribers: list[subscriptions.SubscriberSpec] = Field(default_factory=list, max_length=100_000)

    @field_validator("components")
    @classmethod
    def _unique_keys(cls, value: list[ComponentSpec]) -> list[ComponentSpec]:
        _unique([c.key for c in value], "component key")
        return value

    @field_validator("channels")
    @classmethod
    def _unique_channels(cls, value: list[subscriptions.ChannelSpec]) -> list[subscriptions.ChannelSpec]:
        _unique([c.key for c in value], "channel key")
        return value

    @field_validator("subscribers")
    @classmethod
    def _unique_subscribers(cls, value: list[subscriptions.SubscriberSpec]) -> list[subscriptions.SubscriberSpec]:
        _unique([f"{s.kind} {s.address}" for s in value], "subscriber")
        return value

    @model_validator(mode="after")
    def _references(self) -> OrganizationSpec:
        unknown = subscriptions.dangling(self.channels, self.subscribers, {c.key for c in self.components})
        if unknown:
            raise ValueError(f"channels or subscribers name components this organization does not have: {unknown}")
        return self


class ConfigFile(_Strict):
    organizations: list[OrganizationSpec] = Field(min_length=1)

    @field_validator("organizations")
    @classmethod
    def _unique_slugs(cls, value: list[OrganizationSpec]) -> list[OrganizationSpec]:
        _unique([o.slug for o in value], "organization slug")
        return value


def _unique(values: list[str], what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value!r} appears twice")
        seen.add(value)


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; a configuration file must not have any. Nor
    aliases: nested ones multiply a small file into billions of values ("billion laughs")."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not supported", mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in keys:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            keys.add(key)
        return super().construct_mapping(node, deep)


def load(text: str) -> ConfigFile:
    """Parse and validate a configuration file; ConfigError lists every problem, one per line."""
    if len(text.encode()) > MAX_FILE_BYTES:
        raise ConfigError(f"the file is over {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        raise ConfigError(f"not valid YAML: {_yaml_problem(e)}") from None
    if not isinstance(data, dict):
        raise ConfigError("the file must be a mapping with an `organizations` list")
    missing: list[str] = []
    data = _expand(data, "", missing)
    if missing:
        raise ConfigError("\n".join(missing))
    try:
        return ConfigFile.model_validate(data)
    except ValidationError as e:
        raise ConfigError("\n".join(_problem(error) for error in e.errors())) from None


def _expand(value: Any, path: str, missing: list[str]) -> Any:
    """``value`` with each ``${NAME}`` in its texts replaced by the environment variable NAME;
    a variable that is not set is added to ``missing``, with its path."""
    if isinstance(value, dict):
        return {key: _expand(item, f"{path}.{key}" if path else str(key), missing) for key, item in value.items()}
    if isinstance(value, list):
        return [_expand(item, f"{path}[{index}]", missing) for index, item in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            missing.append(f"{path}: the environment variable {name} is not set")
            return ""
        return os.environ[name]

    return _REFERENCE.sub(replace, value)


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else problem


def _problem(error: Any) -> str:
    path = ""
    for part in error["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown field"
    return f"{path or '(file)'}: {message}"


@dataclasses.dataclass
class Applied:
    organizations: int = 0
    components_created: int = 0
    components_updated: int = 0
    organizations_deleted: int = 0
    components_deleted: int = 0
    channels: int = 0
    subscribers: int = 0
    channels_deleted: int = 0
    subscribers_deleted: int = 0


def steps(config: ConfigFile) -> int:
    """How many steps `apply` reports: one per component, channel and subscriber."""
    return sum(len(o.components) + len(o.channels) + len(o.subscribers) for o in config.organizations)


def apply(config: ConfigFile, *, prune: bool = False, advance: Advance = nothing) -> Applied:
    """Write the configuration in one transaction: all of it, or nothing.

    Parameters:
      advance: called with the number of steps (see `steps`) done as they are done.
    """
    report = Applied()
    with db.atomic():
        kept_organizations = []
        for spec in config.organizations:
            organization = _upsert_organization(spec)
            kept_organizations.append(organization.id)
            report.organizations += 1
            existing = {c.key: c for c in Component.select().where(Component.organization == organization.id)}
            for component in spec.components:
                created = _upsert_component(organization.id, component, existing.get(component.key))
                if created:
                    report.components_created += 1
                else:
                    report.components_updated += 1
                advance(1)
            component_ids = {
                c.key: c.id
                for c in Component.select(Component.id, Component.key).where(Component.organization == organization.id)
            }
            deleted = subscriptions.sync(organization.id, spec.channels, spec.subscribers, component_ids, prune=prune)
            report.channels += len(spec.channels)
            report.subscribers += len(spec.subscribers)
            report.channels_deleted += deleted[0]
            report.subscribers_deleted += deleted[1]
            advance(len(spec.channels) + len(spec.subscribers))
            if prune:
                named = [c.key for c in spec.components]
                report.components_deleted += (
                    Component.delete()
                    .where(Component.organization == organization.id, Component.key.not_in(named or [""]))
                    .execute()
                )
        if prune:
            report.organizations_deleted = (
                Organization.delete().where(Organization.id.not_in(kept_organizations)).execute()
            )
    return report


def _upsert_organization(spec: OrganizationSpec) -> Organization:
    (
        Organization.insert(slug=spec.slug, name=spec.name)
        .on_conflict(conflict_target=[Organization.slug], update={Organization.name: spec.name})
        .execute()
    )
    return Organization.get(Organization.slug == spec.slug)


def _upsert_component(organization_id: int, spec: ComponentSpec, current: Component | None) -> bool:
    """Insert or update one component; True when it is new."""
    fields = {
        "name": spec.name,
        "type": spec.type.upper(),
        "url": spec.url,
        "method": spec.method,
        "headers": spec.headers,
        "body": spec.body,
        "interval_seconds": round(spec.interval.total_seconds()),
        "timeout_ms": round(spec.timeout.total_seconds() * 1000),
        "conditions": spec.conditions,
        "failure_threshold": spec.failure_threshold,
        "success_threshold": spec.success_threshold,
        "auto_incident": spec.auto_incident,
        "paused": spec.paused,
        "extract": spec.extract,
    }
    if current is None:
        # next_check_at stays empty: the scheduler gives it a first slot within seconds.
        component_id = Component.insert(organization=organization_id, key=spec.key, **fields).execute()
    else:
        component_id = current.id
        rescheduled = fields["interval_seconds"] != current.interval_seconds or (current.paused and not spec.paused)
        changes = {**fields, "updated_at": utcnow(), **({"next_check_at": None} if rescheduled else {})}
        Component.update(**changes).where(Component.id == component_id).execute()
    _sync_extracted(component_id, spec.extract)
    MaintenanceWindow.delete().where(MaintenanceWindow.component == component_id).execute()
    if spec.maintenance:
        MaintenanceWindow.insert_many(
            [
                {"component": component_id, "starts_at": m.start, "ends_at": m.end, "title": m.title}
                for m in spec.maintenance
            ]
        ).execute()
    return current is None


def _sync_extracted(component_id: int, extract: dict[str, str]) -> None:
    ExtractedValue.delete().where(
        ExtractedValue.component == component_id, ExtractedValue.name.not_in(list(extract) or [""])
    ).execute()
    for name, path in extract.items():
        (
            ExtractedValue.insert(component=component_id, name=name, path=path)
            .on_conflict(
                conflict_target=[ExtractedValue.component, ExtractedValue.name], update={ExtractedValue.path: path}
            )
            .execute()
        )
