"""Loading a configuration file: `pulse.configfile.load` against PyYAML's own safe loaders on the
same text, in one process.

    python tests/benchmarks/bench_configfile.py --kib 256 1024 4096

Two shapes of file, each at every size: components as a file declares them (7 lines each), and the
densest YAML there is (one line listing numbers, refused by validation once read). For each: the
seconds Pulse takes (best of 3), per MiB, and beside it libyaml all the way (`yaml.CSafeLoader`,
none of Pulse's checks) and PyYAML in Python (`yaml.SafeLoader`), so the ratios survive a noisy
machine. Time per MiB that stays level from size to size is a cost in proportion to the file.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pulse import configfile
from pulse.errors import ConfigError

COMPONENT = """      - key: c{i}
        name: Component {i}
        url: https://api{i}.acme.example/health
        interval: 30s
        timeout: 5s
        conditions: ["[STATUS] == 200", "[BODY].status == UP", "[RESPONSE_TIME] < 800"]
        headers: {{Accept: application/json}}
"""
HEAD = "organizations:\n  - slug: acme\n    name: Acme\n"


def components(size: int) -> str:
    parts, length, i = [HEAD, "    components:\n"], len(HEAD), 0
    while length < size:
        parts.append(COMPONENT.format(i=i))
        length += len(parts[-1])
        i += 1
    return "".join(parts)


def dense(size: int) -> str:
    return HEAD + "    x: [" + ",".join("1" for _ in range(size // 2)) + "]\n"


def pulse(text: str) -> None:
    try:
        configfile.load(text)
    except ConfigError:
        pass


def best(load: Callable[[str], object], text: str) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        load(text)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kib", type=int, nargs="+", default=[256, 1024])
    args = parser.parse_args()
    print(f"libyaml: {yaml.__with_libyaml__}")
    for name, make in (("components", components), ("dense", dense)):
        for kib in args.kib:
            text = make(kib * 1024)
            mib = len(text.encode()) / 2**20
            if len(text.encode()) > configfile.MAX_FILE_BYTES:
                print(f"{name:>10} {kib:>5} KiB: over the limit, refused unread")
                continue
            ours = best(pulse, text)
            c = best(lambda t: yaml.load(t, Loader=yaml.CSafeLoader), text)
            python = best(lambda t: yaml.load(t, Loader=yaml.SafeLoader), text)
            print(
                f"{name:>10} {kib:>5} KiB: pulse {ours:6.2f} s ({ours / mib:5.2f} s/MiB), "
                f"CSafeLoader {c:5.2f} s (x{ours / c:.1f}), SafeLoader {python:6.2f} s"
            )


if __name__ == "__main__":
    main()
