"""The API (`/api/v1` on `pulse serve`): an organization's rows over HTTP, for tokens with scopes.

- `tokens`: making, listing and revoking tokens (`pulse tokens`); a token is printed once and only
  its SHA-256 digest is kept.
"""
