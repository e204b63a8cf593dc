"""django-oauth-toolkit's request validator with the rules MCP clients need kept by the server itself:
plain-http redirects only to this computer, and an authorization code used twice revoking what it issued.

``authorization_server_settings()`` names it as ``OAUTH2_VALIDATOR_CLASS``; a project's own validator
keeps these rules by subclassing it (check ``django_mcp.W020`` says when http redirects go further).
"""

from __future__ import annotations

import uuid
from typing import Any

from oauth2_provider.models import get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2 import InvalidGrantError

from .registration import public_redirect

_CODE_FAMILIES = uuid.UUID("5b0e6f4a-3c1d-5e8f-9a2b-7c4d6e8f0a1b")


def code_family(client_id: str, code: str) -> uuid.UUID:
    """The refresh-token family of the tokens an authorization code was exchanged for: found again from the
    code alone when it comes back, with nothing more stored (and the code itself never stored). A version 5
    UUID: MariaDB's UUID column refuses some other bit patterns."""
    return uuid.uuid5(_CODE_FAMILIES, f"{client_id}\0{code}")


class McpOAuth2Validator(OAuth2Validator):  # type: ignore[misc]  # django-oauth-toolkit has no type hints
    """RFC 6749 §4.1.2: a code used twice is refused, and the tokens issued on its first use are revoked
    (whoever replays it may have stolen it). RFC 8252 §7.3: ``http`` redirects go to a loopback address
    only (a native client's callback); any other must be https or an app's own scheme."""

    def validate_redirect_uri(self, client_id: str, redirect_uri: str, request: Any, *args: Any, **kwargs: Any) -> bool:
        return public_redirect(redirect_uri) and bool(
            super().validate_redirect_uri(client_id, redirect_uri, request, *args, **kwargs)
        )

    def validate_code(self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        # Unknown, expired or already exchanged: only in the last case has the family any token to revoke.
        get_refresh_token_model().revoke_family(code_family(client.client_id, code))
        return False

    def invalidate_authorization_code(self, client_id: str, code: str, request: Any, *args: Any, **kwargs: Any) -> None:
        try:
            super().invalidate_authorization_code(client_id, code, request, *args, **kwargs)
        except InvalidGrantError:
            # Two exchanges of one code raced and the other deleted it first: both token sets go.
            get_refresh_token_model().revoke_family(code_family(request.client.client_id, code))
            raise

    def _create_refresh_token(
        self, request: Any, refresh_token_code: str, access_token: Any, previous_refresh_token: Any
    ) -> Any:
        refresh_token = super()._create_refresh_token(request, refresh_token_code, access_token, previous_refresh_token)
        if previous_refresh_token is None and request.grant_type == "authorization_code":
            refresh_token.token_family = code_family(request.client.client_id, request.code)
            refresh_token.save(update_fields=["token_family"])
        return refresh_token
