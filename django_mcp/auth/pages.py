"""The sign-in pages a person sees, saying what they need to judge a client: the site, who is signed in,
which client asks (and whether anyone vouches for its name), what it may do, and where the browser goes.

Templates ``django_mcp/oauth/login.html`` and ``django_mcp/oauth/authorize.html`` (both extend
``django_mcp/oauth/base.html``, styled inline: no static files to serve) are a project's to override.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.contrib.auth.views import LoginView
from django.contrib.sites.shortcuts import get_current_site
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve, reverse_lazy
from django.utils.http import urlencode
from oauth2_provider import views as oauth_views
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2 import InvalidRequestError

from .registration import refuse_registration


@dataclass(frozen=True)
class ClientIdentity:
    """Who a client is, as far as this site can tell."""

    name: str
    verified_by: str | None
    """The https origin that published the client's metadata document (CIMD), which its ``client_id`` names:
    the name is that site's word. None: nobody vouches for the name."""
    self_declared: bool
    """Registered by anyone, anonymously (dynamic client registration): the name is the client's own claim."""


def identify(application: Any) -> ClientIdentity:
    """What the pages say of ``application`` (django-oauth-toolkit's ``Application``)."""
    source = getattr(application, "registration_source", "manual")
    name = application.name or application.client_id
    if source == "cimd":
        parts = urlsplit(application.client_id)
        return ClientIdentity(name, f"{parts.scheme}://{parts.netloc}", self_declared=False)
    return ClientIdentity(name, None, self_declared=source == "dcr" and application.user_id is None)


def destination(redirect_uri: str) -> str:
    """Where the browser goes after the answer, in words: "this computer" for a loopback callback, an app's
    own scheme for a private-use one, else the host."""
    parts = urlsplit(redirect_uri)
    host = parts.hostname or ""
    if parts.scheme in ("http", "https") and (host == "localhost" or _loopback(host)):
        return "this computer"
    if parts.scheme not in ("http", "https"):
        return f"an app on this computer ({parts.scheme}:)"
    return host


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AuthorizationView(oauth_views.AuthorizationView):  # type: ignore[misc]  # (no stubs: Any)
    """The consent page. A request that cannot succeed is answered before anyone signs in: a bad client,
    redirect or PKCE challenge costs the person nothing, and the login page can name the real client."""

    template_name = "django_mcp/oauth/authorize.html"
    login_url = reverse_lazy("django_mcp_login")

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        self.oauth2_data: dict[str, Any] = {}
        if request.method == "GET":
            try:
                _scopes, credentials = self.validate_authorization_request(request)
                _require_s256(credentials)
            except OAuthToolkitError as error:
                return self.error_response(error, application=None)
        return super().dispatch(request, *args, **kwargs)

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> HttpResponse:
        # The consent page and the error page (django-oauth-toolkit renders that one without get_context_data).
        context.setdefault("site_name", get_current_site(self.request).name)
        return super().render_to_response(context, **kwargs)  # type: ignore[no-any-return]

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        application = context.get("application")
        if application is not None:
            context["client"] = identify(application)
            context["destination"] = destination(context.get("redirect_uri") or "")
            described = oauth2_settings.SCOPES
            context["scope_list"] = [(scope, described.get(scope, scope)) for scope in context.get("scopes", ())]
            context["switch_user_url"] = f"{self.login_url}?{_next(self.request.get_full_path())}"
        return context


def _require_s256(credentials: dict[str, Any]) -> None:
    # django-oauth-toolkit refuses "plain" only once the code is made, after sign-in and consent. RFC 7636
    # §4.3: a challenge without a method is "plain".
    if "code_challenge" in credentials and credentials.get("code_challenge_method", "plain") != "S256":
        raise OAuthToolkitError(
            error=InvalidRequestError(
                description='PKCE code_challenge_method must be "S256"', state=credentials.get("state")
            ),
            redirect_uri=credentials.get("redirect_uri"),
        )


def _next(path: str) -> str:
    return urlencode({"next": path})


class SignInView(LoginView):
    """Django's login view, naming the site and, on the way to a consent page, the client that asked."""

    template_name = "django_mcp/oauth/login.html"
    # Opened directly (no ``next``), a sign-in comes back here and says who is signed in, instead of going to
    # LOGIN_REDIRECT_URL (/accounts/profile/, a 404 in most projects).
    redirect_authenticated_user = False
    next_page = reverse_lazy("django_mcp_login")  # type: ignore[assignment]  # a lazy str is what Django takes

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        context["site_name"] = get_current_site(self.request).name
        context["client"] = _asking_client(self.get_redirect_url())
        return context


def _asking_client(next_url: str) -> ClientIdentity | None:
    """The client whose authorization request ``next_url`` is, if it is one for a known client."""
    if not next_url:
        return None
    parts = urlsplit(next_url)
    try:
        if resolve(parts.path).url_name != "authorize":
            return None
    except Resolver404:
        return None
    client_id = parse_qs(parts.query).get("client_id", [""])[0]
    application = get_application_model().objects.filter(client_id=client_id).first() if client_id else None
    return identify(application) if application is not None else None


class RegistrationView(oauth_views.DynamicClientRegistrationView):  # type: ignore[misc]
    """RFC 7591 registration, its body bounded and anonymous callers rate-limited before DOT reads it."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        refused = refuse_registration(request)
        return refused if refused is not None else super().post(request, *args, **kwargs)
