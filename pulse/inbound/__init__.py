"""The inbound HTTP service (`pulse serve`): what comes in from outside, on uvicorn and Starlette.
It knows no domain: the routes are given it by the composition root (`pulse.app`), from what each
domain exports.

- `app`: the application factory (the routes it is given, one log line and telemetry per request,
  refusals).
- `bounds`: the limits of a request (body size per route) and `RefusedError`, the answer to a request
  outside them.
- `protocol`: uvicorn's HTTP/1.1 protocol with caps on connections (idle ones make room first), a
  bound on a request's head and a deadline on each request's arrival (slow clients).
- `closings`: the connections refused or closed to keep within those bounds, counted and summed up
  in the log.
- `tokens`: a write route authenticated by a token of its own, rate-limited per token.
- `jsonbody`: JSON bodies read so that what is kept fits PostgreSQL (NUL and lone surrogates
  replaced; NaN, Infinity and deep nesting refused).
- `twilio`: Twilio's webhook signature (``X-Twilio-Signature``) and TwiML answers.
- `limits`: the per-token rate limiter (token buckets, per process).
- `telemetry`: the service's Prometheus metrics and their endpoint.
- `server`: the uvicorn server: listening sockets, bounds, graceful stop.
"""
