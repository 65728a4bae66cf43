"""The API (`/api/v1` on `pulse serve`): an organization's rows over HTTP, for tokens with scopes.

- `tokens`: making, listing and revoking tokens (`pulse tokens`); a token is printed once and only
  its SHA-256 digest is kept.
- `auth`: the ``Authorization: Bearer`` of a request: 401, 403 naming the scope it lacks, 429 per
  token; a route's work in a worker thread with a database connection.
- `organization`, `components`: the read-only resources (scope ``read``).
- `pages`: cursor pagination of a listing.
- `routes`: the routes, which `pulse.app` gives `pulse serve`.

An API route answers JSON, an error as ``{"error": "..."}``; it never returns a secret a row holds
(a header's value, a body, a CA's PEM).
"""
