"""The token verifiers: personal tokens, django-oauth-toolkit's tokens, an external issuer's JWTs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django.utils.module_loading import import_string

from .conf import JwtSettings, get_auth_settings
from .digests import PERSONAL_TOKEN_PREFIX, token_digest
from .resource import resource_url
from .tokens import InvalidToken, TokenServiceUnavailable, VerifiedToken

if TYPE_CHECKING:
    from django.http import HttpRequest


class PersonalTokenVerifier:
    """Personal tokens (``mcp_pat_…``) made in the admin or by ``manage.py mcp_token``: one indexed query."""

    def verify(self, token: str, request: HttpRequest) -> VerifiedToken | None:
        if not token.startswith(PERSONAL_TOKEN_PREFIX):
            return None
        from .models import PersonalToken  # not at the top: settings import django_mcp.auth before apps load

        row = PersonalToken.objects.select_related("user").filter(digest=token_digest(token)).first()
        if row is None or row.revoked_at is not None or row.expires_at <= timezone.now():
            raise InvalidToken("The personal token is unknown, expired or revoked")
        # A personal token serves every endpoint of this project: it names no audience to check.
        return VerifiedToken(user=row.user, scopes=frozenset(row.scope_list), audiences=None, expires_at=row.expires_at)


class DjangoOAuthToolkitVerifier:
    """Tokens this project's django-oauth-toolkit issued (or, with its ``RESOURCE_SERVER_INTROSPECTION_URL``,
    tokens of a remote authorization server, checked by RFC 7662 introspection and cached)."""

    def verify(self, token: str, request: HttpRequest) -> VerifiedToken | None:
        # Here: the oauth extra (django-oauth-toolkit) is optional.
        from oauth2_provider.settings import oauth2_settings
        from oauthlib.common import Request

        # An oauthlib request of our own (the toolkit's OAuthLibCore would parse the body, the MCP message),
        # at the endpoint's canonical URL: the toolkit checks a token's resource against it too.
        core = Request(_resource(request), http_method=request.method or "POST")
        if not oauth2_settings.OAUTH2_VALIDATOR_CLASS().validate_bearer_token(token, [], core):
            error = getattr(core, "oauth2_error", None) or {}
            raise InvalidToken(error.get("error_description") or "The access token is invalid, expired or revoked")
        access = core.access_token
        return VerifiedToken(
            user=access.user,
            scopes=frozenset(access.scope.split()),
            # A token without a resource was issued for no resource in particular: it serves none here.
            audiences=tuple(access.resource or ()),
            expires_at=access.expires,
            client_id=access.application.client_id if access.application is not None else None,
        )


class JwtVerifier:
    """JWT access tokens (RFC 9068) of the issuer in ``OAUTH_JWT``: signature by its JWKS (keys cached,
    fetched again for an unknown ``kid``), ``iss``, ``aud``, ``exp``; the user by ``OAUTH_USER_FOR_CLAIMS``."""

    def __init__(self, settings: JwtSettings | None = None) -> None:
        # Here: the oauth extra (PyJWT) is optional.
        from jwt import PyJWKClient

        configured = settings or get_auth_settings().OAUTH_JWT
        if configured is None:
            raise ImproperlyConfigured("JwtVerifier needs DJANGO_MCP['OAUTH_JWT'] (the issuer and its JWKS URL)")
        self.settings = configured
        self._keys = PyJWKClient(
            configured.JWKS_URL,
            cache_keys=True,
            lifespan=configured.JWKS_CACHE_SECONDS,
            cooldown_duration=configured.JWKS_REFRESH_COOLDOWN_SECONDS,
        )

    def verify(self, token: str, request: HttpRequest) -> VerifiedToken | None:
        import jwt  # here: the oauth extra (PyJWT) is optional

        if token.count(".") != 2:
            return None  # not a JWT: another verifier's
        settings = self.settings
        audience = settings.AUDIENCE or _resource(request)
        try:
            key = self._keys.get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=list(settings.ALGORITHMS),
                audience=audience,
                issuer=settings.ISSUER,
                leeway=settings.LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud", settings.USER_CLAIM]},
            )
        except jwt.PyJWKClientConnectionError as exc:
            raise TokenServiceUnavailable(f"The issuer's keys could not be fetched: {exc}") from None
        except (jwt.PyJWTError, ValueError) as exc:
            raise InvalidToken(f"The access token is not valid here: {exc}") from None
        user = import_string(get_auth_settings().OAUTH_USER_FOR_CLAIMS)(claims, settings)
        if user is None:
            raise InvalidToken("The access token's subject is no user of this site")
        expires = claims.get("exp")
        return VerifiedToken(
            user=user,
            scopes=frozenset(_scopes(claims)),
            audiences=None,  # checked above, against AUDIENCE or this endpoint's URL
            expires_at=datetime.fromtimestamp(expires, tz=UTC) if expires else None,
            client_id=claims.get("client_id") or claims.get("azp"),
            issuer=settings.ISSUER,
        )


def user_for_claims(claims: dict[str, Any], settings: JwtSettings) -> Any:
    """The default ``OAUTH_USER_FOR_CLAIMS``: the active user whose ``USERNAME_FIELD`` equals the
    ``USER_CLAIM`` claim (``sub``), or None. Users are not created: make them, or give your own function."""
    user_model = get_user_model()
    value = claims.get(settings.USER_CLAIM)
    if not isinstance(value, str) or not value:
        return None
    return user_model._default_manager.filter(**{user_model.USERNAME_FIELD: value}).first()


def _scopes(claims: dict[str, Any]) -> list[str]:
    # RFC 9068 says "scope" (space-separated); Entra and Okta also use "scp" (a list or a string).
    value = claims.get("scope", claims.get("scp", ""))
    if isinstance(value, list):
        return [str(item) for item in value]
    return str(value).split()


def _resource(request: HttpRequest) -> str:
    """The canonical URL the endpoint's ``BearerAuth`` checks tokens against (its own ``resource_url``)."""
    known = getattr(request, "_mcp_resource", None)
    if isinstance(known, str):
        return known
    return resource_url(request, get_auth_settings().OAUTH_RESOURCE_URL)
