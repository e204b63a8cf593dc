"""What a personal token looks like, and what is stored of it: its model and its verifier share these."""

from __future__ import annotations

import hashlib

PERSONAL_TOKEN_PREFIX = "mcp_pat_"  # noqa: S105 - a marker, not a secret


def token_digest(token: str) -> str:
    """What is stored of a token: its SHA-256 (tokens are random, so no salt or slow hash is needed)."""
    return hashlib.sha256(token.encode()).hexdigest()
