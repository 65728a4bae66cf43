"""Who is on call: rotations, restrictions and overrides, as pure functions that stay right across
daylight-saving changes.

Modelled on PagerDuty's and Grafana OnCall's schedules. A `Schedule` has a time zone (the standard
library's `zoneinfo`; the `tzdata` package supplies the database where the system has none), layers
of rotations and overrides. `on_call` says who is on call at an instant, `shifts` lists the timeline
for display, `problems` says what a configuration check should refuse, and `parse_window`,
`parse_handoff`, `parse_every` and `parse_time_zone` read the text forms of the configuration file
(`format_every` writes one back).

Rules:

- Handoffs are wall-clock times in the schedule's zone. A layer's first handoff is its start date at
  the handoff time (daily and `every`) or, for weekly, the first date on or after the start date that
  falls on the handoff weekday, at the handoff time. The k-th handoff is the first plus k days (daily),
  k weeks (weekly) or k times `every`, added to the local date and time as on a wall clock, and only
  then turned into an instant. So a Monday 09:00 weekly handoff is at 09:00 on both sides of a DST
  change, and the shift that spans the change is an hour shorter or longer (23h or 25h daily, 167h or
  169h weekly, 11h or 13h for the night shift of `every: 12h`); it is never moved.
- A wall-clock time that happens twice (clocks go back) means its first occurrence (`fold=0`). One that
  does not happen (clocks go forward) is read with the offset from before the change, so a 02:30
  handoff in New York on the spring-forward day happens at 03:30 EDT; `problems` refuses such a time.
- Shift k runs from handoff k to handoff k + 1 and belongs to `members[k % len(members)]`. Before its
  first handoff a layer has no one; a layer has no end.
- Restriction windows (`Window`) are wall-clock times too. A window starts on each of its days at
  `start` and ends at `end` the same day, or the next day when `end` is earlier than `start`: it belongs
  to the day it starts, so `fri 22:00-06:00` is Friday night into Saturday morning. On a DST change a
  window lasts what the wall clock says: `00:00-24:00` is 23 or 25 hours, a window inside the skipped
  hour is empty that day, and times that happen twice are in the window both times (in New York on
  2026-11-01, `01:30-03:00` covers 01:30-02:00 EDT, then 01:30-03:00 EST). `end` equal to `start`
  is an empty window, which `problems` refuses: a whole day is `00:00-24:00`. Restrictions do not
  move the rotation (PagerDuty's behaviour): the person whose shift covers the instant is on call only
  inside one of the windows, and outside them the layer has no one. A layer without restrictions has
  its person at every instant.
- Layers stack: the last layer that has someone at the instant decides; the layers below show through
  where it has no one. Where no layer has anyone, no one is on call.
- Overrides are absolute instants and win over every layer, starting or ending mid-shift if they
  like. Where several cover the instant, the one that starts latest wins; of several that start at
  the same instant, the one listed last.
- Every interval is half-open: at a handoff the new person is on call, and a window or an override
  covers its start but not its end.
- `shifts` leaves no gaps: where no one is on call it shows a shift of person None from "nobody".
  A shift's `source` is its path in the schedule, "layers[1]" or "overrides[0]", as `problems` names them.

`on_call` finds the shift that covers an instant by arithmetic on the local date and time, then
checks the neighbouring handoffs' instants: its cost does not grow with the number of shifts since the
layer's start.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAILY = "daily"
WEEKLY = "weekly"
MIN_EVERY = timedelta(hours=1)  # no shorter than the DST changes in use, so handoffs stay in order
MAX_EVERY = timedelta(days=28)  # four weeks: longer rotations are rarer than mistakes such as 700h
EVERY_DAY = (0, 1, 2, 3, 4, 5, 6)
DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NOBODY = "nobody"  # the source of a `Shift` in which no one is on call
YEARS = (1970, 2999)  # of any date a schedule names or is asked about: far inside what datetime holds (1-9999)

_DAYS = {name: i for i, name in enumerate(DAY_NAMES)} | {name[:3]: i for i, name in enumerate(DAY_NAMES)}
_TIME = re.compile(r"([0-9]{1,2}):([0-9]{2})")
_WINDOW = re.compile(r"(?:(?P<days>\S.*?)\s+)?(?P<start>[0-9]{1,2}:[0-9]{2})\s*-\s*(?P<end>[0-9]{1,2}:[0-9]{2})")
_EVERY = re.compile(r"(?:([0-9]+)\s*d)?\s*(?:([0-9]+)\s*h)?\s*(?:([0-9]+)\s*m)?", re.IGNORECASE)
_MICROSECOND = timedelta(microseconds=1)
_SAMPLE = timedelta(hours=6)  # `shifts` looks for offset changes this far apart (no zone has two in 6 hours)


@dataclasses.dataclass(frozen=True)
class Window:
    """A restriction: on each of `days` (0 = Monday ... 6 = Sunday), from `start` to `end`, local time.

    `end` earlier than `start` ends the next day (`18:00-08:00` is a night); `end=None` is 24:00, the
    end of the start day (`00:00-24:00` is the whole day). `end == start` is empty: `problems` refuses it.
    """

    days: tuple[int, ...]
    start: time
    end: time | None

    def covers(self, local: datetime) -> bool:
        """Whether the window covers a local wall-clock time (the schedule zone's, naive)."""
        at, day = local.time(), local.weekday()
        start = self.start.replace(tzinfo=None)
        end = None if self.end is None else self.end.replace(tzinfo=None)
        if end is None:
            return day in self.days and at >= start
        if start < end:
            return day in self.days and start <= at < end
        if start > end:  # crosses midnight: the night that started yesterday, or the one starting today
            return (day in self.days and at >= start) or ((day - 1) % 7 in self.days and at < end)
        return False


@dataclasses.dataclass(frozen=True)
class Handoff:
    """When a layer's shifts change hands: a local time, and for a weekly rotation a weekday.

    `day` is 0 (Monday) to 6 (Sunday), for weekly rotations only; without it a weekly rotation hands
    off on its start date's weekday.
    """

    at: time
    day: int | None = None


@dataclasses.dataclass(frozen=True)
class Layer:
    """A rotation: `members` take turns, one shift each, in order, from the first handoff on.

    `rotation` is "daily", "weekly", or a `timedelta` for a custom rotation (`every: 12h`). `start` is
    a date in the schedule's zone. An empty `restrict` means the layer has someone at every instant.
    """

    rotation: str | timedelta
    handoff: Handoff
    start: date
    members: tuple[str, ...]
    restrict: tuple[Window, ...] = ()


@dataclasses.dataclass(frozen=True)
class Override:
    """`person` is on call from `start` to `end` (aware datetimes), whatever the layers say."""

    person: str
    start: datetime
    end: datetime


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Layers, later ones on top, and overrides above them all, in one time zone."""

    key: str
    time_zone: ZoneInfo
    layers: tuple[Layer, ...] = ()
    overrides: tuple[Override, ...] = ()


@dataclasses.dataclass(frozen=True)
class Shift:
    """A stretch of the final timeline: `person` on call from `start` to `end` (aware, UTC).

    `source` is where it comes from, as a path in the schedule: "layers[1]" or "overrides[0]"; a
    stretch in which no one is on call has `person` None and `source` "nobody".
    """

    person: str | None
    start: datetime
    end: datetime
    source: str


# Who is on call.


def on_call(schedule: Schedule, instant: datetime) -> tuple[str, ...]:
    """The people on call at an aware instant: one person, or no one (an empty tuple).

    The override that covers the instant and starts latest; else the person of the last layer that
    has someone then; else no one. Raises ValueError for a naive instant or a layer whose rotation is
    not "daily", "weekly" or a positive `timedelta`.
    """
    person, _ = _who(schedule, _utc(instant, "instant"))
    return () if person is None else (person,)


def shifts(schedule: Schedule, start: datetime, end: datetime) -> list[Shift]:
    """The final timeline from `start` to `end` (aware), for display: consecutive `Shift`s in order.

    The first starts at `start` and the last ends at `end`, clipped there; they leave no gap, since
    stretches in which no one is on call are shifts of person None. Adjacent stretches of the same
    person from the same source are one shift: a one-member layer is one long shift, while a layer's
    person followed by the same person's override are two. Empty when `end` is not after `start`.
    """
    start, end = _utc(start, "start"), _utc(end, "end")
    if end <= start:
        return []
    zone = schedule.time_zone
    changes = {start}
    for layer in schedule.layers:
        changes.update(_layer_changes(layer, zone, start, end))
    for override in schedule.overrides:
        changes.update((_utc(override.start, "override start"), _utc(override.end, "override end")))
    if any(layer.restrict for layer in schedule.layers):
        changes.update(_offset_changes(zone, start, end))
    ordered = sorted(t for t in changes if start <= t < end)
    timeline: list[Shift] = []
    for begin, finish in zip(ordered, [*ordered[1:], end], strict=True):
        person, source = _who(schedule, begin)
        if timeline and timeline[-1].person == person and timeline[-1].source == source:
            timeline[-1] = dataclasses.replace(timeline[-1], end=finish)
        else:
            timeline.append(Shift(person, begin, finish, source))
    return timeline


def _who(schedule: Schedule, instant: datetime) -> tuple[str | None, str]:
    """The person on call at a UTC instant (or None) and the path of where it comes from."""
    chosen: tuple[datetime, int] | None = None
    for i, override in enumerate(schedule.overrides):
        begin = _utc(override.start, "override start")
        if begin <= instant < _utc(override.end, "override end") and (chosen is None or begin >= chosen[0]):
            chosen = (begin, i)
    if chosen is not None:
        return schedule.overrides[chosen[1]].person, f"overrides[{chosen[1]}]"
    for i in reversed(range(len(schedule.layers))):
        person = _layer_person(schedule.layers[i], schedule.time_zone, instant)
        if person is not None:
            return person, f"layers[{i}]"
    return None, NOBODY


def _layer_person(layer: Layer, zone: ZoneInfo, instant: datetime) -> str | None:
    if not layer.members:
        return None
    k = _shift_index(layer, zone, instant)
    if k is None:
        return None
    if layer.restrict:
        local = _local(instant, zone)
        if not any(window.covers(local) for window in layer.restrict):
            return None
    return layer.members[k % len(layer.members)]


def _shift_index(layer: Layer, zone: ZoneInfo, instant: datetime) -> int | None:
    """k of the shift that covers a UTC instant (the last handoff at or before it), None before the first.

    The floor division of the local wall-clock distance from the first handoff is right but for the
    hour or so around a DST change, where the neighbouring handoffs' instants settle it.
    """
    first, period = _first_handoff(layer), _period(layer)
    k = max((_local(instant, zone) - first) // period, -1)
    while _handoff(first, period, k + 1, zone) <= instant:
        k += 1
    while k >= 0 and _handoff(first, period, k, zone) > instant:
        k -= 1
    return k if k >= 0 else None


def _first_handoff(layer: Layer) -> datetime:
    """The first handoff, as a naive local datetime."""
    day = layer.start
    if layer.rotation == WEEKLY and layer.handoff.day is not None:
        day += timedelta(days=(layer.handoff.day - day.weekday()) % 7)
    return datetime.combine(day, layer.handoff.at.replace(tzinfo=None))


def _period(layer: Layer) -> timedelta:
    """The wall-clock time from one handoff to the next."""
    if isinstance(layer.rotation, timedelta):
        if layer.rotation <= timedelta(0):
            raise ValueError(f"every {layer.rotation}: a rotation must last longer than nothing")
        return layer.rotation
    if layer.rotation == DAILY:
        return timedelta(days=1)
    if layer.rotation == WEEKLY:
        return timedelta(weeks=1)
    raise ValueError(f"rotation {layer.rotation!r}: expected 'daily', 'weekly' or a timedelta")


def _handoff(first: datetime, period: timedelta, k: int, zone: ZoneInfo) -> datetime:
    """The k-th handoff's instant, in UTC: wall-clock arithmetic, then the first occurrence."""
    return (first + k * period).replace(tzinfo=zone).astimezone(UTC)


def _local(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None)


def _utc(instant: datetime, name: str) -> datetime:
    if instant.utcoffset() is None:
        raise ValueError(f"{name} {instant.isoformat()} has no time zone: give an aware datetime")
    return instant.astimezone(UTC)


# Where the timeline may change: handoffs, window edges, override edges, and the zone's own changes.


def _layer_changes(layer: Layer, zone: ZoneInfo, start: datetime, end: datetime) -> Iterator[datetime]:
    if not layer.members:
        return
    first, period = _first_handoff(layer), _period(layer)
    k = _shift_index(layer, zone, start)
    k = 0 if k is None else k + 1
    while (at := _handoff(first, period, k, zone)) < end:
        yield at
        k += 1
    if layer.restrict:
        yield from _window_edges(layer.restrict, zone, start, end)


def _window_edges(windows: Iterable[Window], zone: ZoneInfo, start: datetime, end: datetime) -> Iterator[datetime]:
    """The instants at which the wall clock reaches a window's start or end (both, where it does twice)."""
    day, last = _local(start, zone).date() - timedelta(days=1), _local(end, zone).date()
    while day <= last:
        for window in windows:
            if day.weekday() not in window.days:
                continue
            begin = datetime.combine(day, window.start.replace(tzinfo=None))
            if window.end is None:
                finish = datetime.combine(day + timedelta(days=1), time())
            else:
                finish = datetime.combine(day, window.end.replace(tzinfo=None))
                if window.end <= window.start:
                    finish += timedelta(days=1)
            for local in (begin, finish):
                yield local.replace(tzinfo=zone, fold=0).astimezone(UTC)
                yield local.replace(tzinfo=zone, fold=1).astimezone(UTC)
        day += timedelta(days=1)


def _offset_changes(zone: ZoneInfo, start: datetime, end: datetime) -> Iterator[datetime]:
    """The instants from `start` to `end` at which the zone's UTC offset changes (DST and the like)."""
    before = start
    offset = before.astimezone(zone).utcoffset()
    while before < end:
        after = min(before + _SAMPLE, end)
        if after.astimezone(zone).utcoffset() != offset:
            yield (change := _offset_change(zone, before, after))
            offset = change.astimezone(zone).utcoffset()
        before = after


def _offset_change(zone: ZoneInfo, before: datetime, after: datetime) -> datetime:
    """The first instant after `before`, and no later than `after`, with another offset than `before`'s."""
    offset = before.astimezone(zone).utcoffset()
    while after - before > _MICROSECOND:
        middle = before + (after - before) // 2
        if middle.astimezone(zone).utcoffset() == offset:
            before = middle
        else:
            after = middle
    return after


# What a configuration check refuses.


def problems(schedule: Schedule, *, years: int = 2, since: date | None = None) -> list[str]:
    """What a configuration check should refuse, each as "<path>: <what is wrong and what to do>".

    A layer with no members; a rotation that is not "daily", "weekly" or an `every` from 1h to 28
    days; a handoff weekday on a rotation that is not weekly, or outside 0-6; a handoff that does not
    exist (falls in the hour skipped when clocks go forward) on a day it is due in the schedule's zone,
    within `years` of the layer's start, or of `since` (today, say) when that is later: the first
    such day is named; a restriction window without days, with a day outside 0-6, or of zero length; an
    override without a person, with a naive start or end, or whose end is not after its start.
    A handoff that happens twice (clocks go back) is not a problem: it is the first occurrence.
    """
    found: list[str] = []
    for i, layer in enumerate(schedule.layers):
        found.extend(_layer_problems(f"layers[{i}]", layer, schedule.time_zone, years, since))
    for j, override in enumerate(schedule.overrides):
        found.extend(_override_problems(f"overrides[{j}]", override))
    return found


def _layer_problems(path: str, layer: Layer, zone: ZoneInfo, years: int, since: date | None) -> Iterator[str]:
    if not layer.members:
        yield f"{path}.members: no one: a layer needs at least one person"
    for j, member in enumerate(layer.members):
        if not member:
            yield f"{path}.members[{j}]: empty: name a person"
    every = isinstance(layer.rotation, timedelta)
    rotation_ok = True
    if isinstance(layer.rotation, timedelta):
        if not MIN_EVERY <= layer.rotation <= MAX_EVERY:
            yield f"{path}.every: {format_every(layer.rotation)} is not from 1h to 28 days"
            rotation_ok = False
    elif layer.rotation not in (DAILY, WEEKLY):
        yield f"{path}.rotation: {layer.rotation!r} is not daily or weekly (or a custom every)"
        rotation_ok = False
    day = layer.handoff.day
    if day is not None and day not in EVERY_DAY:
        yield f"{path}.handoff: day {day} is not 0 (Monday) to 6 (Sunday)"
        rotation_ok = False
    elif day is not None and layer.rotation != WEEKLY:
        yield f"{path}.handoff: a weekday only applies to a weekly rotation: give the time alone, such as 09:00"
    if rotation_ok:
        gap = _first_gap(layer, zone, years, since)
        if gap is not None:
            before, after = _clocks(zone, gap)
            changed = f"(clocks go from {_hhmm(before)} to {_hhmm(after)})"
            avoid = "that hour" if after - before == timedelta(hours=1) else f"{_hhmm(before)}-{_hhmm(after)}"
            if every:
                yield (
                    f"{path}.handoff: the handoff due at {_hhmm(gap)} on {gap.date()} (every "
                    f"{format_every(_period(layer))} from {_first_handoff(layer):%Y-%m-%d %H:%M}) does not exist "
                    f"in {zone} {changed}; choose a handoff time or an every that avoids {avoid}"
                )
            else:
                yield (
                    f"{path}.handoff: {_hhmm(gap)} does not exist in {zone} on {gap.date()} {changed}; "
                    f"choose a time outside {avoid}"
                )
    for j, window in enumerate(layer.restrict):
        yield from _window_problems(f"{path}.restrict[{j}]", window)


def _window_problems(path: str, window: Window) -> Iterator[str]:
    if not window.days:
        yield f"{path}: no days: leave the days out for every day"
    elif any(day not in EVERY_DAY for day in window.days):
        yield f"{path}: days {list(window.days)} are not all 0 (Monday) to 6 (Sunday)"
    if window.end is not None and window.end == window.start:
        yield (
            f"{path}: {_hhmm(window.start)}-{_hhmm(window.end)} is empty (it ends when it starts); "
            "for a whole day write 00:00-24:00"
        )


def _override_problems(path: str, override: Override) -> Iterator[str]:
    if not override.person:
        yield f"{path}.person: empty: name a person"
    aware = True
    for name, at in (("start", override.start), ("end", override.end)):
        if at.utcoffset() is None:
            yield f"{path}.{name}: {at.isoformat()} has no time zone: add one, such as Z or +01:00"
            aware = False
    if aware and override.end <= override.start:
        yield f"{path}.end: {override.end.isoformat()} is not after the start, {override.start.isoformat()}"


def _first_gap(layer: Layer, zone: ZoneInfo, years: int, since: date | None) -> datetime | None:
    """The first handoff (naive local) in the checked years that the wall clock skips, or None."""
    first, period = _first_handoff(layer), _period(layer)
    begin = layer.start if since is None else max(layer.start, since)
    k = max(-((first - datetime.combine(begin, time())) // period), 0)  # the first handoff on or after `begin`
    limit = datetime.combine(_add_years(begin, years), time())
    while (local := first + k * period) < limit:
        if _local(local.replace(tzinfo=zone).astimezone(UTC), zone) != local:
            return local
        k += 1
    return None


def _clocks(zone: ZoneInfo, skipped: datetime) -> tuple[datetime, datetime]:
    """The wall-clock times just before and just after the jump that skips a local time."""
    early = skipped.replace(tzinfo=zone, fold=1).astimezone(UTC)  # read with the offset after the jump
    late = skipped.replace(tzinfo=zone, fold=0).astimezone(UTC)  # with the offset before it
    change = _offset_change(zone, early, late)
    offset_before = (change - _MICROSECOND).astimezone(zone).utcoffset()
    assert offset_before is not None
    return change.replace(tzinfo=None) + offset_before, _local(change, zone)


def _add_years(day: date, years: int) -> date:
    try:
        return day.replace(year=day.year + years)
    except ValueError:  # 29 February
        return day.replace(year=day.year + years, day=28)


def _hhmm(at: time | datetime) -> str:
    return f"{at:%H:%M}" if at.second == 0 else f"{at:%H:%M:%S}"


# The text forms of the configuration file.


def parse_window(text: str) -> Window:
    """A restriction window from its text: optional days, then a time range, local time.

    Days: one (`mon`), a range (`mon-fri`, or `fri-mon` across the weekend), or a comma list of
    those (`mon,wed,fri`, `mon-wed,fri`), by 3-letter or full names in any case; no days is every day.
    Times: `HH:MM-HH:MM`; an end earlier than the start is the next day (`18:00-08:00`), 24:00 only
    ends a window (`00:00-24:00` is the whole day), and an end equal to the start is refused.
    Raises ValueError with the reason.
    """
    found = _WINDOW.fullmatch(text.strip())
    if found is None:
        expected = "such as 'mon-fri 09:00-17:00', 'sat-sun 00:00-24:00' or '18:00-08:00'"
        if not text.strip():
            raise ValueError(f"empty: expected days (optional) and a time range, {expected}")
        if ":" not in text:
            raise ValueError(f"{text!r} has no time range: expected days (optional) and HH:MM-HH:MM, {expected}")
        raise ValueError(f"{text!r} is not a restriction: expected days (optional) and a time range, {expected}")
    days = _parse_days(found["days"]) if found["days"] else EVERY_DAY
    start = _parse_time(found["start"])
    end = _parse_time(found["end"])
    if start is None:
        raise ValueError("24:00 can only end a window: start at 00:00")
    if end == start:
        raise ValueError(
            f"{found['start']}-{found['end']} is empty (it ends when it starts): for a whole day write 00:00-24:00"
        )
    return Window(days, start, end)


def parse_handoff(text: str) -> Handoff:
    """A handoff from its text: a local time (`09:00`), or a weekday and a time (`monday 09:00`,
    `Mon 09:00`) for a weekly rotation. Raises ValueError with the reason."""
    words = text.split()
    if not words or len(words) > 2:
        raise ValueError(
            f"{text!r} is not a handoff: expected a time such as 09:00, or a weekday and a time such as monday 09:00"
        )
    day = _parse_day(words[0]) if len(words) == 2 else None
    at = _parse_time(words[-1])
    if at is None:
        raise ValueError("24:00 is not a handoff time: write 00:00")
    return Handoff(at, day)


def in_years(when: date) -> None:
    """Refuse a date or time outside `YEARS`: the maths of a schedule near the ends of what
    datetime holds would leave them. Raises ValueError."""
    if not YEARS[0] <= when.year <= YEARS[1]:
        raise ValueError(f"{when.isoformat()} is not between the years {YEARS[0]} and {YEARS[1]}")


def parse_every(text: str) -> timedelta:
    """The length of a custom rotation's shifts from its text: `12h`, `8h`, `90m`, `1h30m`, `2d`, `1d12h`.

    Whole days, hours and minutes, from 1h (a shorter shift could be skipped over, or start before the
    previous one, when clocks go forward an hour) to 28 days (four weeks: beyond that, a mistake such as
    700h is likelier than a rotation). Raises ValueError with the reason.
    """
    found = _EVERY.fullmatch(text.strip())
    if found is None or not text.strip():
        raise ValueError(f"{text!r} is not a duration: expected hours and minutes such as 12h, 8h or 1h30m")
    try:
        days, hours, minutes = (int(group or 0) for group in found.groups())
        every = timedelta(days=days, hours=hours, minutes=minutes)
    except (OverflowError, ValueError):  # beyond what timedelta (or int, at over 4,300 digits) holds
        every = timedelta.max
    if every < MIN_EVERY:
        raise ValueError(f"{text.strip()} is shorter than 1h: a shift lasts at least an hour")
    if every > MAX_EVERY:
        raise ValueError(f"{text.strip()} is longer than 28 days: use weekly, or at most 28d")
    return every


def parse_time_zone(text: str) -> ZoneInfo:
    """A time zone from its IANA name (`Europe/London`, `America/New_York`, `UTC`). Raises ValueError."""
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"{text!r} is not a time zone: expected an IANA name such as Europe/London or America/New_York"
        ) from None


def format_every(every: timedelta) -> str:
    """A custom rotation's length as `parse_every` reads it: `12h`, `1h30m`, `1d12h`."""
    minutes, seconds = divmod(int(every.total_seconds()), 60)
    days, rest = divmod(minutes, 24 * 60)
    parts = (f"{days}d" if days else "", f"{rest // 60}h" if rest // 60 else "", f"{rest % 60}m" if rest % 60 else "")
    text = "".join(parts) + (f"{seconds}s" if seconds else "")
    return text or "0m"


def _parse_days(text: str) -> tuple[int, ...]:
    days: set[int] = set()
    for item in text.split(","):
        first, dash, last = (part.strip() for part in item.partition("-"))
        if not first or (dash and not last):
            raise ValueError(f"{text!r} is not a list of days: expected such as mon-fri or mon,wed,fri")
        a = _parse_day(first)
        b = _parse_day(last) if dash else a
        days.update((a + n) % 7 for n in range((b - a) % 7 + 1))
    return tuple(sorted(days))


def _parse_day(word: str) -> int:
    day = _DAYS.get(word.lower())
    if day is None:
        raise ValueError(f"{word!r} is not a day: expected mon, tue, wed, thu, fri, sat or sun, or the full name")
    return day


def _parse_time(word: str) -> time | None:
    """A time of day from `HH:MM`; `24:00` is None, the end of the day, which only ends a window."""
    found = _TIME.fullmatch(word)
    if found is None:
        raise ValueError(f"{word!r} is not a time: expected HH:MM, such as 09:00")
    hour, minute = int(found[1]), int(found[2])
    if (hour, minute) == (24, 0):
        return None
    if hour > 23:
        raise ValueError(f"{word}: hours go from 00 to 23 (24:00 only ends a window)")
    if minute > 59:
        raise ValueError(f"{word}: minutes go from 00 to 59")
    return time(hour, minute)
