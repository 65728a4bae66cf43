"""`pulse apply -f FILE.yaml`: organizations with their components (`pulse.uptime.spec`),
notification channels and subscribers (`pulse.notifications.spec`), integrations and metrics
(`pulse.metrics.spec`), calculated metrics (`pulse.calculated.spec`), people, on-call schedules
and escalation policies (`pulse.oncall.spec`), alert sources (`pulse.sources.spec`), and how long their history is kept
(`pulse.cleanup.spec`), declared in a file.

Validation is whole-file: every problem is reported with its path, field and reason, and nothing
is written unless the file is valid. ``${NAME}`` in any text is replaced by the environment
variable NAME (for secrets: webhook URLs, signing secrets), which must be set. Numbers are read
as YAML 1.2 reads them: ``17:30`` is a time of day in a text, not the number 1050 (YAML 1.1's
base 60). Applying is
idempotent (upsert by slug, key or address) and happens in one transaction; ``prune`` also
deletes what the file no longer names, but for the components, channels and subscribers made
through the API (`pulse.api.resources`), which a file takes over only by naming them.

A file is at most 5 MiB; loading it takes time in proportion to its size, at most about 4 s a MiB
on a 2-core machine (the densest YAML, a list of numbers on one line; components take 1 s a MiB):
`tests/benchmarks/bench_configfile.py` measures it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import yaml
from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from pulse.calculated import spec as calculated_spec
from pulse.cleanup.spec import RetentionSpec
from pulse.db import db
from pulse.errors import ConfigError
from pulse.metrics import spec as metrics_spec
from pulse.models import Organization
from pulse.notifications import spec as notifications
from pulse.oncall import spec as oncall
from pulse.sources import spec as sources
from pulse.spec import Slug, Strict, problem_lines, unique
from pulse.spec import path as _path
from pulse.uptime import spec as uptime

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_DEPTH = 20  # the file's own shape is 6 deep; the rest is room for header maps and the like
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# YAML 1.1's numbers without its base 60 (``17:30`` = 1050, ``1:30.5`` = 90.5), which YAML 1.2 dropped.
_NUMBERS = {
    "tag:yaml.org,2002:int": re.compile(r"^[-+]?(?:0b[0-1_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+)$"),
    "tag:yaml.org,2002:float": re.compile(
        r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
}


class OrganizationSpec(Strict):
    slug: Slug
    name: str = Field(min_length=1, max_length=200)
    components: list[uptime.ComponentSpec] = Field(default_factory=list, max_length=50_000)
    channels: list[notifications.ChannelSpec] = Field(default_factory=list, max_length=1000)
    subscribers: list[notifications.SubscriberSpec] = Field(default_factory=list, max_length=100_000)
    integrations: list[metrics_spec.IntegrationSpec] = Field(default_factory=list, max_length=100)
    metrics: list[metrics_spec.MetricSpec] = Field(default_factory=list, max_length=50_000)
    calculated_metrics: list[calculated_spec.CalculatedMetricSpec] = Field(default_factory=list, max_length=50_000)
    people: list[oncall.PersonSpec] = Field(default_factory=list, max_length=10_000)
    schedules: list[oncall.ScheduleSpec] = Field(default_factory=list, max_length=1000)
    escalation_policies: list[oncall.EscalationPolicySpec] = Field(default_factory=list, max_length=1000)
    alert_sources: list[sources.AlertSourceSpec] = Field(default_factory=list, max_length=1000)
    retention: RetentionSpec = Field(default_factory=RetentionSpec)

    @field_validator("components")
    @classmethod
    def _unique_keys(cls, value: list[uptime.ComponentSpec]) -> list[uptime.ComponentSpec]:
        unique([c.key for c in value], "component key")
        return value

    @field_validator("channels")
    @classmethod
    def _unique_channels(cls, value: list[notifications.ChannelSpec]) -> list[notifications.ChannelSpec]:
        unique([c.key for c in value], "channel key")
        return value

    @field_validator("subscribers")
    @classmethod
    def _unique_subscribers(cls, value: list[notifications.SubscriberSpec]) -> list[notifications.SubscriberSpec]:
        unique([f"{s.kind} {s.address}" for s in value], "subscriber")
        return value

    @field_validator("integrations")
    @classmethod
    def _unique_integrations(cls, value: list[metrics_spec.IntegrationSpec]) -> list[metrics_spec.IntegrationSpec]:
        unique([i.key for i in value], "integration key")
        return value

    @field_validator("metrics")
    @classmethod
    def _unique_metrics(cls, value: list[metrics_spec.MetricSpec]) -> list[metrics_spec.MetricSpec]:
        unique([m.key for m in value], "metric key")
        return value

    @field_validator("calculated_metrics")
    @classmethod
    def _unique_calculated(
        cls, value: list[calculated_spec.CalculatedMetricSpec]
    ) -> list[calculated_spec.CalculatedMetricSpec]:
        unique([c.key for c in value], "calculated metric key")
        return value

    @field_validator("people", "schedules", "escalation_policies", "alert_sources")
    @classmethod
    def _unique_oncall(cls, value: list[Any], info: ValidationInfo) -> list[Any]:
        what = {"people": "person", "schedules": "schedule", "escalation_policies": "escalation policy",
                "alert_sources": "alert source"}  # fmt: skip
        unique([item.key for item in value], f"{what[str(info.field_name)]} key")
        return value

    @model_validator(mode="after")
    def _references(self) -> OrganizationSpec:
        unknown = notifications.dangling(self.channels, self.subscribers, {c.key for c in self.components})
        if unknown:
            raise ValueError(f"channels or subscribers name components this organization does not have: {unknown}")
        metric_components = {c.key for c in self.components if c.type == "metric"}
        problems = metrics_spec.references(self.integrations, self.metrics, metric_components)
        problems += calculated_spec.references(self.calculated_metrics, self.metrics, self.components)
        problems += oncall.references(self.people, self.schedules, self.escalation_policies, self.components)
        problems += sources.references(self.alert_sources, {p.key for p in self.escalation_policies})
        if problems:
            raise ValueError("\n".join(problems))
        return self


class ConfigFile(Strict):
    organizations: list[OrganizationSpec] = Field(min_length=1)

    @field_validator("organizations")
    @classmethod
    def _unique_slugs(cls, value: list[OrganizationSpec]) -> list[OrganizationSpec]:
        unique([o.slug for o in value], "organization slug")
        tokens = [c.token for o in value for c in o.components if c.token]
        if len(set(tokens)) < len(tokens):
            raise ValueError("two heartbeats have the same ping token")  # the token itself is a secret
        tokens = [s.token for o in value for s in o.alert_sources]
        if len(set(tokens)) < len(tokens):
            raise ValueError("two alert sources have the same token")
        return value


_Events: Any
if yaml.__with_libyaml__:  # libyaml scans and parses 7 times faster than PyYAML's Python
    _Events = yaml.cyaml.CParser  # type: ignore[attr-defined]
else:  # pragma: no cover - PyYAML built without libyaml

    class _Events(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


class _Loader(yaml.composer.Composer, yaml.constructor.SafeConstructor, yaml.resolver.Resolver, _Events):
    """`yaml.SafeLoader` with its events from libyaml when PyYAML has it (a load takes 3 to 4 times
    less time, still in proportion to the file's size), and stricter. PyYAML keeps the last of two
    equal keys; a configuration file must not have any. Nor aliases: nested ones multiply a small
    file into billions of values ("billion laughs"). Nor more than `MAX_DEPTH` levels of nesting.
    Nor base 60: a time of day such as 17:30 stays a text."""

    yaml_implicit_resolvers = {
        first: [(tag, _NUMBERS.get(tag, pattern)) for tag, pattern in resolvers]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        _Events.__init__(self, stream)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self.depth = 0  # of the node being composed

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not supported", mark)
        if not self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent):
            return super().compose_node(parent, index)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, f"the file is nested more than {MAX_DEPTH} levels deep", mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):  # a !!set or !!map tag on a list or a text
            raise yaml.constructor.ConstructorError(None, None, "expected a mapping", node.start_mark)
        keys = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):  # a list, a mapping, a !!set
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    "a key must be a plain value (text or a number), not a list or a mapping",
                    key_node.start_mark,
                )
            if key in keys:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            keys.add(key)
        return super().construct_mapping(node, deep)


def _scalar(what: str, construct: Callable[[Any, yaml.ScalarNode], Any]) -> Callable[[Any, yaml.ScalarNode], Any]:
    """``construct``, with a value it cannot read (``2020-13-45``, an integer of 5,000 digits,
    ``!!int x``) refused as not a valid ``what``, at its place in the file."""

    def checked(loader: Any, node: yaml.ScalarNode) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, ArithmeticError, LookupError, AttributeError, TypeError):
            raise yaml.constructor.ConstructorError(None, None, f"not a valid {what}", node.start_mark) from None

    return checked


for _tag, _what in [
    ("int", "integer (of at most 4300 digits)"),
    ("float", "number"),
    ("bool", "boolean (true or false)"),
    ("timestamp", "date or time (put a text in quotes)"),
]:
    _Loader.add_constructor(
        f"tag:yaml.org,2002:{_tag}", _scalar(_what, yaml.SafeLoader.yaml_constructors[f"tag:yaml.org,2002:{_tag}"])
    )


def load(source: str | bytes) -> ConfigFile:
    """Parse and validate a configuration file (UTF-8 text); ConfigError lists every problem, one
    per line, and never repeats a value (it may be a secret)."""
    text = _text(source)
    try:
        data = yaml.load(text, Loader=_Loader)
        if not isinstance(data, dict):
            raise ConfigError("the file must be a mapping with an `organizations` list")
        problems: list[str] = []
        sources: dict[str, dict[str, str]] = {}
        data = _expand(data, (), problems, sources)
        if problems:
            raise ConfigError("\n".join(problems))
        try:
            return ConfigFile.model_validate(data)
        except ValidationError as e:
            shown = _words(_REFERENCE.sub("", text))  # what the file itself shows, no value of a variable
            raise ConfigError("\n".join(_problem(error, sources, shown) for error in e.errors())) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"not valid YAML: {_yaml_problem(e)}") from None


def _text(source: str | bytes) -> str:
    """The file's text: at most `MAX_FILE_BYTES` of UTF-8."""
    if isinstance(source, str):  # a lone surrogate passes, to be refused as the bytes it is
        source = source.encode("utf-8", "surrogatepass")
    if len(source) > MAX_FILE_BYTES:
        raise ConfigError(f"the file is over {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"the file is not UTF-8 text (byte 0x{source[e.start]:02x} at offset {e.start})") from None


def _expand(value: Any, loc: tuple[Any, ...], problems: list[str], sources: dict[str, dict[str, str]]) -> Any:
    """``value`` with each ``${NAME}`` in its texts replaced by the environment variable NAME. A
    variable that is not set, and a NUL character (which no text may hold), are added to
    ``problems`` with their path; each text that took a variable's value is added to ``sources``:
    its path, and the values it took by name."""
    if isinstance(value, dict):
        return {key: _expand(item, (*loc, key), problems, sources) for key, item in value.items()}
    if isinstance(value, list):
        return [_expand(item, (*loc, index), problems, sources) for index, item in enumerate(value)]
    if not isinstance(value, str):
        return value
    taken: dict[str, str] = {}

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            problems.append(f"{_path(loc)}: the environment variable {name} is not set")
            return ""
        taken[name] = os.environ[name]
        return taken[name]

    expanded = _REFERENCE.sub(replace, value) if "${" in value else value
    if taken:
        sources[_path(loc)] = taken
    if "\x00" in expanded:
        problems.append(f"{_path(loc)}: a NUL character is not allowed in a text")
    return expanded


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]  # a ReaderError: no mark
    if isinstance(error, yaml.reader.ReaderError):
        problem += f" (at offset {error.position})"
    if problem == "exceeded maximum nesting depth":  # libyaml's limit (1000 levels), met first when it reads ahead
        problem = f"the file is nested more than {MAX_DEPTH} levels deep"
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else problem


def _problem(error: Any, sources: dict[str, dict[str, str]], shown: set[str]) -> str:
    """One line per problem, each with its path in the file (`pulse.spec.problem_lines`). No line
    repeats a value taken from the environment
    (`sources`, as `_expand` found them) but for the words the file ``shown`` itself."""
    return "\n".join(
        _unrepeated(line, sources, shown, ours=inner or error["type"] == "value_error")
        for line, inner in problem_lines(error)
    )


def _unrepeated(line: str, sources: dict[str, dict[str, str]], shown: set[str], *, ours: bool) -> str:
    """``line`` (``<path>: <reason>``) with no value taken from the environment.

    The reason Pulse's own checks (``ours``: pydantic's never quote a value) give for refusing
    such a value, or a part by one of its fields that holds one, may quote it in any form (a
    duration as ``48h``, a formula's names): it is left out, unless it holds no word of the value
    but those the file ``shown`` in plain text (a slack channel refused for its ``to`` names its
    kind, slack, also a word of its URL). A value quoted elsewhere (a key that appears twice)
    reads ``${NAME}``."""
    where = re.split(r"[\s:]", line, maxsplit=1)[0]
    reason = line[len(where) :]
    for source, taken in sources.items():
        if _within(source, where):
            for name, value in taken.items():
                forms = {value, value.strip(), repr(value)[1:-1], repr(value.strip())[1:-1]} - {""}
                for form in sorted(forms, key=len, reverse=True):
                    reason = reason.replace(form, f"${{{name}}}")
    for source, taken in sources.items():
        field = source.removeprefix(f"{where}.") if source.startswith(f"{where}.") else None
        quoted = field is not None and not re.search(r"[.\[]", field) and _quotes(reason, taken.values(), shown)
        if ours and (_within(where, source) or quoted):
            names = ", ".join(f"${{{name}}}" for name in taken)
            return f"{where}: not valid (the reason would repeat the value of {names}, from the environment)"
    return where + reason


def _quotes(reason: str, values: Iterable[str], shown: set[str]) -> bool:
    """Whether ``reason`` holds a word of one of ``values`` that is not among the words ``shown``."""
    return bool(_words(reason) & (set().union(*map(_words, values)) - shown))


def _words(text: str) -> set[str]:
    """The words of ``text`` of 3 characters or more."""
    return set(re.findall(r"\w{3,}", text))


def _within(path: str, part: str) -> bool:
    """Whether ``path`` is ``part`` or inside it ("(file)" holds every path)."""
    return part == "(file)" or path == part or path.startswith((f"{part}.", f"{part}["))


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
    integrations: int = 0
    metrics: int = 0
    integrations_deleted: int = 0
    metrics_deleted: int = 0
    calculated_metrics: int = 0
    calculated_metrics_deleted: int = 0
    heartbeats: int = 0  # of the components created and updated
    people: int = 0
    schedules: int = 0
    escalation_policies: int = 0
    people_deleted: int = 0
    schedules_deleted: int = 0
    escalation_policies_deleted: int = 0
    alert_sources: int = 0
    alert_sources_deleted: int = 0
    subscribers_gone: list[str] = dataclasses.field(default_factory=list)  # named, but their subscription is gone


def steps(config: ConfigFile) -> int:
    """How many steps `apply` reports: one per component, channel, subscriber, metric and calculated
    metric."""
    return sum(
        len(o.components) + len(o.channels) + len(o.subscribers) + len(o.metrics) + len(o.calculated_metrics)
        for o in config.organizations
    )


def apply(config: ConfigFile, *, prune: bool = False, advance: Callable[[int], object] | None = None) -> Applied:
    """Write the configuration in one transaction: all of it, or nothing.

    Parameters:
      advance: called with the number of steps (see `steps`) done as they are done.
    """
    advance = advance or _nothing
    report = Applied()
    with db.atomic():
        kept_organizations = []
        for spec in config.organizations:
            organization = _upsert_organization(spec)
            kept_organizations.append(organization.id)
            report.organizations += 1
            policy_ids, (people, schedules, policies) = oncall.sync(
                organization.id, spec.people, spec.schedules, spec.escalation_policies, prune=prune
            )
            report.people += len(spec.people)
            report.schedules += len(spec.schedules)
            report.escalation_policies += len(spec.escalation_policies)
            report.people_deleted += people
            report.schedules_deleted += schedules
            report.escalation_policies_deleted += policies
            report.heartbeats += sum(1 for component in spec.components if component.type == "heartbeat")
            report.alert_sources += len(spec.alert_sources)
            report.alert_sources_deleted += sources.sync(organization.id, spec.alert_sources, prune=prune)
            created, updated, deleted = uptime.sync(
                organization.id, spec.components, policy_ids=policy_ids, prune=prune, advance=advance
            )
            report.components_created += created
            report.components_updated += updated
            report.components_deleted += deleted
            component_ids = uptime.component_ids(organization.id)
            channels_deleted, subscribers_deleted, gone = notifications.sync(
                organization.id, spec.channels, spec.subscribers, component_ids, prune=prune
            )
            report.channels += len(spec.channels)
            report.subscribers += len(spec.subscribers)
            report.channels_deleted += channels_deleted
            report.subscribers_deleted += subscribers_deleted
            report.subscribers_gone += [f"{spec.slug}: {name}" for name in gone]
            advance(len(spec.channels) + len(spec.subscribers))
            integrations_deleted, metrics_deleted = metrics_spec.sync(
                organization.id, spec.integrations, spec.metrics, component_ids, prune=prune, advance=advance
            )
            report.integrations += len(spec.integrations)
            report.metrics += len(spec.metrics)
            report.integrations_deleted += integrations_deleted
            report.metrics_deleted += metrics_deleted
            report.calculated_metrics += len(spec.calculated_metrics)
            report.calculated_metrics_deleted += calculated_spec.sync(
                organization.id, spec.calculated_metrics, component_ids, prune=prune, advance=advance
            )
        if prune:
            report.organizations_deleted = (
                Organization.delete().where(Organization.id.not_in(kept_organizations)).execute()
            )
    return report


def _nothing(steps: int) -> None:
    """The ``advance`` of an apply nobody watches."""


def _upsert_organization(spec: OrganizationSpec) -> Organization:
    retention = spec.retention.stored()
    (
        Organization.insert(slug=spec.slug, name=spec.name, retention=retention)
        .on_conflict(
            conflict_target=[Organization.slug],
            update={Organization.name: spec.name, Organization.retention: retention},
        )
        .execute()
    )
    return Organization.get(Organization.slug == spec.slug)
