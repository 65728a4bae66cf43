"""The cleanup worker: history that stays small and fast to read.

- `rollups`: hourly and daily rollups of checks and data points, kept long after the raw rows,
  brought up to date every few minutes; `pulse.uptime.overview` reads them.
- `partitions`: the day partitions of the history tables, made ahead, dropped when past retention.
- `retention`: what the daily cleanup deletes, table by table, in bounded steps.
- `run`: one cleanup (lock, rollups, partitions, retention, the record of the run).
- `spec`: each organization's ``retention`` in the configuration file.
"""
