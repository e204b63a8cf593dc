"""``BearerAuth``: the MCP endpoint as an OAuth 2.1 resource server (RFC 6750, RFC 8707, RFC 9728)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ..pooled import gives_back_pooled_connections
from ..protocol.errors import INVALID_REQUEST, McpJsonRpcError
from . import cache
from .conf import AuthSettings, get_auth_settings
from .resource import covers, metadata_url, resource_url
from .tokens import InvalidToken, TokenVerifier, VerifiedToken

if TYPE_CHECKING:
    from django.http import HttpRequest

PERSONAL_TOKENS = "django_mcp.auth.PersonalTokenVerifier"
JWT_TOKENS = "django_mcp.auth.JwtVerifier"
OAUTH_TOOLKIT_TOKENS = "django_mcp.auth.DjangoOAuthToolkitVerifier"


class BearerAuth:
    """Guard an endpoint with OAuth bearer tokens: ``McpServer(auth=BearerAuth())``, or
    ``DJANGO_MCP["AUTH"] = "django_mcp.auth.BearerAuth"`` for every server.

    A token must verify (see ``OAUTH_TOKEN_VERIFIERS``), act for an active user, be issued for
    this endpoint (its canonical URL, ``OAUTH_RESOURCE_URL``) and carry the endpoint's scopes
    (``OAUTH_SCOPES``). Anything else is answered 401 (403 for missing scopes) with a
    ``WWW-Authenticate`` challenge pointing at the RFC 9728 metadata. The token's user becomes
    ``request.user``; ``request.auth`` is the :class:`VerifiedToken`.
    """

    def __init__(
        self,
        *,
        scopes: Sequence[str] | None = None,
        resource_url: str | None = None,
        verifiers: Sequence[TokenVerifier | str] | None = None,
    ) -> None:
        self._scopes = tuple(scopes) if scopes is not None else None
        self._resource_url = resource_url.rstrip("/") if resource_url else None
        self._verifiers = tuple(verifiers) if verifiers is not None else None
        self._built: tuple[AuthSettings, tuple[TokenVerifier, ...]] | None = None

    @property
    def scopes(self) -> tuple[str, ...]:
        """What every token must carry here."""
        return self._scopes if self._scopes is not None else get_auth_settings().OAUTH_SCOPES

    @property
    def configured_resource_url(self) -> str | None:
        """The resource URL given here or in settings; None to derive it from each request."""
        return self._resource_url or get_auth_settings().OAUTH_RESOURCE_URL

    def resource(self, request: HttpRequest) -> str:
        """The canonical URL of the endpoint ``request`` reached (the audience its tokens need)."""
        return resource_url(request, self.configured_resource_url)

    @property
    def verifiers(self) -> tuple[TokenVerifier, ...]:
        """The verifiers asked in turn (built once per settings: ``DJANGO_MCP`` may change in tests)."""
        settings = get_auth_settings()
        built = self._built
        if built is None or built[0] is not settings:
            configured = self._verifiers
            if configured is None:
                configured = settings.OAUTH_TOKEN_VERIFIERS or default_verifiers()
            built = self._built = (settings, tuple(_verifier(v) for v in configured))
        return built[1]

    async def __call__(self, request: HttpRequest) -> VerifiedToken | None:
        if "access_token" in request.META.get("QUERY_STRING", "") and "access_token" in request.GET:
            # RFC 9700 / MCP: a token in the URL leaks into logs and Referer headers; never accept one.
            raise InvalidToken("Send the access token in the Authorization header, never in the query string")
        header = request.META.get("HTTP_AUTHORIZATION")  # not request.headers: that copies every header
        if header is None:
            return None  # no credentials: the 401 without an error code
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        settings = get_auth_settings()
        if scheme.lower() != "bearer" or not token or token.split(maxsplit=1) != [token]:
            raise InvalidToken("The Authorization header must be 'Bearer <token>'")
        if len(token) > settings.OAUTH_MAX_TOKEN_CHARS:
            raise InvalidToken("The access token is too long")
        # Remembered per endpoint and per auth: a JWT's audience, or which verifiers accept a token, were
        # checked for this resource and this BearerAuth only.
        resource = self.resource(request)
        key = cache.key_of(token, resource, str(id(self)))
        verified = await cache.arecall(key)
        if verified is None:
            since = cache.generation()
            request._mcp_resource = resource  # type: ignore[attr-defined]  # what the verifiers check against
            # The verifiers may query the database or fetch keys: in the request's worker thread, which gives
            # its pooled connection back before the request goes on to wait for the tasks' store (pooled.py).
            verified = await sync_to_async(gives_back_pooled_connections(self.verify))(request, token)
            cache.remember(key, verified, settings.OAUTH_TOKEN_CACHE_SECONDS, since)
        return self._admit(request, verified, resource)

    def verify(self, request: HttpRequest, token: str) -> VerifiedToken:
        """The first verifier's answer for ``token``, with its user checked (a worker thread's work)."""
        for verifier in self.verifiers:
            verified = verifier.verify(token, request)
            if verified is not None:
                break
        else:
            raise InvalidToken("The access token is invalid, expired or revoked")
        user = verified.user
        if user is None or not getattr(user, "is_active", False):
            raise InvalidToken("The access token acts for no active user")
        return verified

    def _admit(self, request: HttpRequest, verified: VerifiedToken, resource: str) -> VerifiedToken:
        """The checks that depend on this endpoint and this request: audience and scopes; then the identity."""
        audiences = verified.audiences
        if audiences is not None and not any(covers(aud, resource) for aud in audiences):
            raise InvalidToken(
                "The access token names no resource (RFC 8707): ask for one for this endpoint"
                if not audiences
                else "The access token was issued for another resource"
            )
        if not set(self.scopes) <= verified.scopes:
            raise self.insufficient_scope(request, ())
        user = cache.own_user(verified.user)
        request.user = user

        async def auser() -> Any:
            return user

        request.auser = auser  # what the view resolves the user from
        return VerifiedToken(  # this request's: its own user, its challenge
            user,
            verified.scopes,
            audiences,
            verified.expires_at,
            verified.client_id,
            verified.issuer,
            # By the endpoint's URL, not the request: a task's body keeps its caller's token for as long
            # as it runs, and the request that brought it is over.
            partial(self._insufficient_scope_at, resource),
        )

    def challenge(
        self, request: HttpRequest, error: str | None = None, description: str | None = None, scopes: Iterable[str] = ()
    ) -> str:
        """The ``WWW-Authenticate`` value: the scopes wanted and where the resource metadata is."""
        return self._challenge_at(self.resource(request), error, description, scopes)

    def _challenge_at(
        self, resource: str, error: str | None = None, description: str | None = None, scopes: Iterable[str] = ()
    ) -> str:
        wanted = list(dict.fromkeys([*self.scopes, *scopes]))
        params = {
            "error": error,
            "error_description": description,
            "scope": " ".join(wanted) or None,
            "resource_metadata": metadata_url(resource),
        }
        return "Bearer " + ", ".join(f'{key}="{_quoted(value)}"' for key, value in params.items() if value)

    def unauthorized(self, request: HttpRequest, error: InvalidToken | None) -> McpJsonRpcError:
        """The 401 for a request without a good token (``error`` None: it brought none)."""
        description = str(error) if error is not None else None
        return McpJsonRpcError(
            INVALID_REQUEST,
            f"Unauthorized: {description}" if description else "Unauthorized: valid credentials are required",
            http_status=401,
            headers={"WWW-Authenticate": self.challenge(request, "invalid_token" if error else None, description)},
        )

    def insufficient_scope(self, request: HttpRequest, needed: Iterable[str]) -> McpJsonRpcError:
        """The 403 that names every scope the call needs (the endpoint's and ``needed``), to step up once."""
        return self._insufficient_scope_at(self.resource(request), needed)

    def _insufficient_scope_at(self, resource: str, needed: Iterable[str]) -> McpJsonRpcError:
        wanted = list(dict.fromkeys([*self.scopes, *needed]))
        return McpJsonRpcError(
            INVALID_REQUEST,
            f"Forbidden: this request needs the scopes {' '.join(wanted)}",
            {"requiredScopes": wanted},
            http_status=403,
            headers={"WWW-Authenticate": self._challenge_at(resource, "insufficient_scope", None, needed)},
        )


def _quoted(value: str) -> str:
    # RFC 9110 quoted-string: printable ASCII only (a description may echo a client's value, e.g. a JWT
    # kid), backslash and quote escaped.
    printable = "".join(c if " " <= c <= "~" else "?" for c in value)
    return printable.replace("\\", "\\\\").replace('"', '\\"')


def default_verifiers() -> tuple[str, ...]:
    """Personal tokens; then JWTs when ``OAUTH_JWT`` is set; then django-oauth-toolkit's when installed."""
    chosen = [PERSONAL_TOKENS]
    if get_auth_settings().OAUTH_JWT is not None:
        chosen.append(JWT_TOKENS)
    if apps.is_installed("oauth2_provider"):
        chosen.append(OAUTH_TOOLKIT_TOKENS)
    return tuple(chosen)


def _verifier(value: TokenVerifier | str) -> TokenVerifier:
    if not isinstance(value, str):
        return value
    try:
        made = import_string(value)
    except ImportError as exc:
        raise ImproperlyConfigured(f"Token verifier {value!r} cannot be imported: {exc}") from None
    verifier: TokenVerifier = made() if isinstance(made, type) else made
    return verifier
