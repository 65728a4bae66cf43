"""Progress of long commands, on stderr and only when stderr is a terminal.

The work itself knows nothing of rich: it takes an ``advance(steps)`` callable and calls it as it
goes (`pulse.configfile.apply`, `pulse.deadletters.requeue`), and workers that import those
modules do not import rich.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

Advance = Callable[[int], None]


@contextlib.contextmanager
def shown(description: str, total: int | None = None, *, console: Console | None = None) -> Iterator[Advance]:
    """Show a transient progress bar while the block runs; yields ``advance(steps)``.

    Parameters:
      description: what is being done, e.g. "applying".
      total: steps to do, or None for a phase that cannot count (a spinner and a pulsing bar).
      console: where to draw; by default stderr, drawn on only when it is a terminal (so
        FORCE_COLOR, which colors output, does not animate a log file; TERM=dumb or
        TTY_INTERACTIVE=0 turn it off too).
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn

    console = console or Console(stderr=True, force_terminal=sys.stderr.isatty())
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),  # a file's name is shown as written
        BarColumn(),
        TaskProgressColumn(text_format="{task.completed}/{task.total}", text_format_no_percentage=""),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
        disable=not console.is_interactive,
    ) as progress:
        task = progress.add_task(description, total=total)
        yield lambda steps: progress.advance(task, steps)
