"""Heartbeat monitors: components that a job pings (a backup, a cron job) instead of being checked.
A ping is recorded by `ping.record` in one statement, without RabbitMQ; the claim-and-send loop
(`schedules/uptime.py`) sends to the ``heartbeat`` actor each monitor whose pings wait to be applied
or whose deadline passed (`due`), and the actor applies them to the component's status through the
one state machine (`apply`). The configuration file's part is `spec`."""
