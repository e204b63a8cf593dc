"""How a bearer token check can fail: the sign-in room raises these, the view answers them (401, 503)."""

from __future__ import annotations


class InvalidToken(Exception):
    """The bearer token is not good here: unknown, expired, revoked, for another resource or for nobody.

    Answered with HTTP 401 and ``WWW-Authenticate: Bearer error="invalid_token"``; the message
    becomes the challenge's ``error_description`` (so it must name no secret).
    """


class TokenServiceUnavailable(Exception):
    """What a token is checked against cannot be reached (answered 503, not 401: the token may be good)."""
