"""The sign-in pages a person judges a client by: the consent page says which site, who is signed in, which
client (verified or self-declared), what it may do and where the browser goes; the login page names the
site and the client; a request that cannot succeed is refused before anyone signs in."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.contrib.auth.models import User
from oauth2_provider.models import Application

pytestmark = pytest.mark.django_db

VERIFIER = "v" * 64
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()
LOOPBACK = "http://127.0.0.1:53123/callback"
CIMD_CLIENT = "https://client.example/mcp-test-client"  # tests.oauth.CIMD_DOCUMENTS


def register(client, name: str = "Claude", redirect: str = LOOPBACK) -> str:
    metadata = {
        "client_name": name,
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    response = client.post("/o/register/", json.dumps(metadata), content_type="application/json")
    assert response.status_code == 201, response.content
    return str(response.json()["client_id"])


def made_by_the_admins(client_id: str, redirect: str, name: str = "") -> Application:
    return Application.objects.create(
        name=name or client_id,
        client_id=client_id,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=redirect,
    )


def authorize_url(client_id: str, redirect: str = LOOPBACK, **change: str | None) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect,
        "state": "s1",
        "code_challenge": CHALLENGE,
        "code_challenge_method": "S256",
        "scope": "mcp notes:write",
        **change,
    }
    return "/o/authorize/?" + urlencode({k: v for k, v in query.items() if v is not None})


def text(response) -> str:
    """The body's words, tags dropped and spaces folded: what a person reads."""
    body = re.sub(r"</?(?:strong|code|span|a|em)\b[^>]*>", "", response.content.decode().split("<body>", 1)[1])
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body))).strip()


def title(response) -> str:
    return unescape(re.search(r"<title>(.*?)</title>", response.content.decode(), re.S).group(1)).strip()


@pytest.fixture
def ada(client):
    user = User.objects.create_user("ada", password="pw-for-ada")
    return user


def test_a_self_declared_client_is_called_so_and_the_page_says_site_user_scopes_and_destination(client, ada):
    client_id = register(client, "Claude")
    client.force_login(ada)
    page = client.get(authorize_url(client_id))
    assert page.status_code == 200
    words = text(page)
    assert title(page) == "Allow Claude to use testserver? · testserver"
    assert "Allow Claude to use testserver as you?" in words
    assert 'Not verified: anyone can register a client under any name. "Claude" is what it calls itself' in words
    assert "Signed in as ada · not you?" in words
    assert "Sends you to this computer" in words
    assert "Use the MCP tools (mcp)" in words and "Write notes (notes:write)" in words
    switch = re.search(r'href="([^"]+)">not you\?', page.content.decode()).group(1)
    assert unescape(switch).startswith("/o/login/?next=%2Fo%2Fauthorize%2F%3F")


def test_a_client_with_a_metadata_document_is_verified_by_its_https_origin(client, ada):
    client.force_login(ada)
    page = client.get(authorize_url(CIMD_CLIENT, "http://127.0.0.1:3030/callback"))
    assert page.status_code == 200, page.content
    words = text(page)
    assert "Verified: this client's identity is published by https://client.example" in words
    assert "Not verified" not in words and "django-mcp test client" in title(page)


def test_a_client_the_admins_made_says_so_and_names_its_https_destination(client, ada):
    made_by_the_admins("desk", "https://desk.example.org/oauth/cb", "Support desk")
    client.force_login(ada)
    words = text(client.get(authorize_url("desk", "https://desk.example.org/oauth/cb")))
    assert "Registered by this site's administrators." in words
    assert "Sends you to desk.example.org (https://desk.example.org/oauth/cb)" in words


def test_an_apps_own_scheme_is_an_app_on_this_computer(client, ada):
    client_id = register(client, "Cursor", "cursor://anysphere.cursor-mcp/oauth/callback")
    client.force_login(ada)
    words = text(client.get(authorize_url(client_id, "cursor://anysphere.cursor-mcp/oauth/callback")))
    assert "Sends you to an app on this computer (cursor:)" in words


def test_the_login_page_names_the_site_and_the_client_that_asked(client):
    client_id = register(client, "Claude")
    sent = client.get(authorize_url(client_id))
    assert sent.status_code == 302 and sent["Location"].startswith("/o/login/?next=")
    page = client.get(sent["Location"])
    assert title(page) == "Sign in · testserver"
    assert "Sign in to testserver Claude wants to use this site's tools as you." in text(page)


def test_the_pages_need_no_static_files(client, ada):
    client_id = register(client)
    login = client.get(client.get(authorize_url(client_id))["Location"]).content.decode()
    client.force_login(ada)
    consent = client.get(authorize_url(client_id)).content.decode()
    for html in (login, consent):
        assert "<style>" in html and "<link" not in html and "/static/" not in html
        assert "prefers-color-scheme: dark" in html


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"code_challenge_method": "plain"}, 'PKCE code_challenge_method must be "S256"'),
        ({"code_challenge_method": None}, 'PKCE code_challenge_method must be "S256"'),  # RFC 7636: plain
        ({"code_challenge": None, "code_challenge_method": None}, "Code challenge required"),
    ],
)
def test_a_bad_pkce_challenge_is_refused_before_sign_in(client, change, error):
    client_id = register(client)
    response = client.get(authorize_url(client_id, **change))
    assert response.status_code == 302, response.content
    callback = parse_qs(urlsplit(response["Location"]).query)
    assert response["Location"].startswith(LOOPBACK)  # back to the client, not to /o/login/
    assert callback["error"] == ["invalid_request"] and callback["state"] == ["s1"]
    assert error in callback["error_description"][0]


def test_an_unknown_client_is_refused_on_a_page_before_sign_in(client):
    response = client.get(authorize_url("no-such-client"))
    assert response.status_code == 400
    assert "This sign-in cannot go on invalid_request: Invalid client_id parameter value." in text(response)
    assert title(response) == "Sign-in failed · testserver"


def test_a_plain_http_redirect_to_another_host_is_refused_even_for_a_client_the_admins_made(client, ada):
    made_by_the_admins("intranet", "http://intranet.example/cb")
    client.force_login(ada)
    refused = client.get(authorize_url("intranet", "http://intranet.example/cb"))
    assert refused.status_code == 400 and "Mismatching redirect URI" in text(refused)  # never sent there
