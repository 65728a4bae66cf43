"""`pulse cleanup --dry-run`: what the daily cleanup would delete, per table; `pulse cleanup run`:
run it now."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import click

from pulse.cli.output import echo, fail, print_json, print_table, settings


@click.group(invoke_without_command=True)
@click.option("--dry-run", is_flag=True, help="Print what would be deleted, per table; delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def cleanup(ctx: click.Context, dry_run: bool, as_json: bool) -> None:
    """Retention and rollups. `pulse cleanup --dry-run` prints what the daily cleanup (00:00 UTC)
    would delete now, per table; `pulse cleanup run` runs it now."""
    if ctx.invoked_subcommand is not None:
        if dry_run or as_json:
            fail(f"--dry-run and --json go before no command: pulse cleanup {ctx.invoked_subcommand} --json", code=2)
        return
    if not dry_run:
        fail("say what to do: pulse cleanup --dry-run, or pulse cleanup run", code=2)
    from pulse.cleanup import retention
    from pulse.models import utcnow

    current = settings()
    report = retention.clean(utcnow(), dead_letters=timedelta(days=current.dead_letter_retention_days), dry_run=True)
    show(report, as_json, verb="would delete")


@cleanup.command("run")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def run_now(as_json: bool) -> None:
    """Run the cleanup now: bring the rollups up to date, make the coming days' partitions, delete
    what is past its retention. Exits 1 when another cleanup is running."""
    from pulse.cleanup import run

    current = settings()
    step = run.run(dead_letters=timedelta(days=current.dead_letter_retention_days), budget_s=3600)
    if step.report is None:
        fail("another cleanup is running (a worker's): try again when it is done")
    show(step.report, as_json, verb="deleted", run_id=step.run_id, seconds=step.seconds)


COMMANDS = [cleanup]


def show(report: Any, as_json: bool, *, verb: str, run_id: int | None = None, seconds: float | None = None) -> None:
    from pulse.cleanup import rollups
    from pulse.cleanup import run as cleanup_run

    last = cleanup_run.last_success()
    watermarks = rollups.watermarks()
    if as_json:
        print_json(
            {
                "tables": [dataclasses.asdict(found) for found in report.tables],
                "rows": report.rows,
                "finished": report.finished,
                "run": run_id,
                "seconds": seconds,
                "last_success": last and last.isoformat(),
                "rollups": {kind: at and at.isoformat() for kind, at in watermarks.items()},
            }
        )
        return
    print_table(
        ["table", "rule", "rows", "partitions", "size", "kept for now"],
        [
            [
                f.table,
                f.rule,
                f.rows,
                ", ".join(f.partitions) or None,
                _size(f.bytes) if f.partitions else None,
                f.held or None,
            ]
            for f in report.tables
        ],
    )
    echo(
        f"{verb} {report.rows} row(s)" + ("" if report.finished else " (its time ran out: the rest is left for later)")
    )
    echo(f"last successful cleanup: {last.isoformat(timespec='seconds') if last else 'never'}")
    echo("rollups hold what was recorded until: " + ", ".join(
        f"{kind} {at.isoformat(timespec='seconds') if at else 'nothing yet'}" for kind, at in watermarks.items()
    ))  # fmt: skip


def _size(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size} B"
