"""The API (`/api/v1` on `pulse serve`): an organization's rows over HTTP, for tokens with scopes.

- `tokens`: making, listing and revoking tokens (`pulse tokens`); a token is printed once and only
  its SHA-256 digest is kept.
- `auth`: the ``Authorization: Bearer`` of a request: 401, 403 naming the scope it lacks, 429 per
  token; a route's work in a worker thread with a database connection.
- `resources`: what the configuration file declares, read (scope ``read``) and made, replaced,
  patched and deleted by the file's spec, and released from the file: `components`, `channels`,
  `subscribers`, `alert_sources`, one `resources.Resource` each.
- `organization`, `checks` and `uptime` (a component's), `incidents`, `alerts`, `audit`: the
  other resources read (scope ``read``).
- `writes`: a route that writes (scope ``write``): one transaction, an ``Idempotency-Key``, an
  audit row.
- `pages`: cursor pagination of a listing; `params`: filters, instants and ids, or a 400 naming them.
- `routes`: the routes, which `pulse.app` gives `pulse serve`; `declared`: what each declares of
  itself (a `declared.Operation` a method), which `openapi` makes ``/api/openapi.json`` of.

An API route answers JSON, an error as ``{"error": "..."}``; it never returns a secret a row holds
(a header's value, a body, a CA's PEM, a source's token or signing secret, a channel's URL or a
webhook's secret) nor an on-call person's contact details (a phone number, an address: a person is
named by key and name). A subscriber is its address, and shown with it when it is an email address or a phone
number (a URL by its host).
"""
