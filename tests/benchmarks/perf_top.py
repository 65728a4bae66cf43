"""The top entries of a CPU profile of Pulse's workers, from `perf` samples, by Python function.

    PYTHONPERFSUPPORT=1 python3.12 tests/benchmarks/bench_uptime.py --threads 8 &   # Python 3.12 or later
    perf record -F 497 --call-graph dwarf,16384 -p $(pgrep -d, -f 'dramatiq pulse.actors') -o perf.data -- sleep 40
    perf script -i perf.data -F comm,tid,ip,sym | python tests/benchmarks/perf_top.py

With ``PYTHONPERFSUPPORT=1`` Python 3.12 and later name each Python frame on the native stack
(``py::function:file``), so `perf` samples the processes only while they run on a CPU, kernel time
included: unlike a sampler of Python stacks, waiting costs nothing here. Each sample counts for its
innermost Python function (what it ran, the C and kernel code it called included); samples with no
Python frame are named by their innermost native function. Prints each function's share of the
samples, the largest first, and the share that was kernel time.
"""

from __future__ import annotations

import collections
import sys


def innermost(sample: list[str]) -> str:
    """The innermost Python function of one sample's frames (innermost first), else its native top."""
    for frame in sample:
        symbol = frame.split(maxsplit=1)[-1]
        if symbol.startswith("py::"):
            function, _, path = symbol[4:].partition(":")
            return f"{function} ({path.rsplit('site-packages/', 1)[-1].rsplit('/lib/python3', 1)[-1]})"
    return sample[0].split(maxsplit=1)[-1] if sample else "?"


def main(text: str, top: int = 30) -> None:
    shares: collections.Counter[str] = collections.Counter()
    kernel = total = 0
    for block in text.split("\n\n"):
        frames = [line.strip() for line in block.strip().splitlines()[1:] if line.strip()]
        if not frames:
            continue
        total += 1
        kernel += frames[0].startswith("ffffffff")
        shares[innermost(frames)] += 1
    if not total:
        sys.exit("no samples on stdin (perf script -F comm,tid,ip,sym)")
    print(f"{total} samples, {100 * kernel / total:.0f} % in the kernel")
    for name, count in shares.most_common(top):
        print(f"{100 * count / total:5.1f} %  {name}")


if __name__ == "__main__":
    main(sys.stdin.read(), int(sys.argv[1]) if len(sys.argv) > 1 else 30)
