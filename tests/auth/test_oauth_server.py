"""This project as the authorization server: metadata, registration rules, personal tokens in admin and CLI."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from oauth2_provider.models import Application

from django_mcp.auth.registration import public_redirect
from django_mcp.models import PersonalToken

pytestmark = pytest.mark.django_db

PUBLIC = {
    "client_name": "a public client",
    "redirect_uris": ["http://127.0.0.1:53123/callback"],
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
    "token_endpoint_auth_method": "none",
}


def test_server_metadata_has_what_mcp_clients_need(client):
    document = client.get("/.well-known/oauth-authorization-server").json()
    assert document["issuer"] == "http://testserver"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["client_id_metadata_document_supported"] is True
    assert document["authorization_response_iss_parameter_supported"] is True
    assert document["registration_endpoint"] == "http://testserver/o/register/"
    assert "none" in document["token_endpoint_auth_methods_supported"]
    assert {"implicit", "password"}.isdisjoint(document["grant_types_supported"])
    # Only what a client registered anonymously can use (client_credentials and the device grant were listed).
    assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]


def test_anyone_may_register_a_public_client(client):
    response = client.post("/o/register/", json.dumps(PUBLIC), content_type="application/json")
    assert response.status_code == 201, response.content
    registered = Application.objects.get(client_id=response.json()["client_id"])
    assert registered.client_type == Application.CLIENT_PUBLIC


@pytest.mark.parametrize(
    "change",
    [
        {"token_endpoint_auth_method": "client_secret_basic"},
        {"token_endpoint_auth_method": None},  # defaults to client_secret_basic: confidential
        {"grant_types": ["client_credentials"]},
    ],
)
def test_anonymous_registration_of_anything_else_is_refused(client, change):
    metadata = {k: v for k, v in {**PUBLIC, **change}.items() if v is not None}
    response = client.post("/o/register/", json.dumps(metadata), content_type="application/json")
    assert response.status_code in (401, 403), response.content
    assert not Application.objects.exists()


@pytest.mark.parametrize("redirect", ["http://attacker.example/callback", "javascript:alert(1)"])
def test_an_anonymous_redirect_the_server_will_not_take_is_invalid_redirect_uri(client, redirect):
    response = client.post(
        "/o/register/", json.dumps({**PUBLIC, "redirect_uris": [redirect]}), content_type="application/json"
    )
    assert (response.status_code, response.json()["error"]) == (400, "invalid_redirect_uri")  # RFC 7591 §3.2.2
    assert not Application.objects.exists()


@pytest.mark.parametrize(
    ("uri", "allowed"),
    [
        ("https://claude.ai/api/mcp/auth_callback", True),
        ("http://127.0.0.1:33418/callback", True),
        ("http://[::1]:8080/cb", True),
        ("http://localhost:6274/oauth/callback", True),
        ("cursor://anysphere.cursor-mcp/oauth/callback", True),
        ("http://192.168.1.5/cb", False),
        ("http://example.com/cb", False),
        ("https:///nohost", False),
        ("data:text/html,x", False),
    ],
)
def test_public_redirects(uri, allowed):
    assert public_redirect(uri) is allowed


def test_authorization_sends_a_stranger_to_the_login_page(client):
    response = client.get("/o/authorize/?client_id=x&response_type=code")
    assert response.status_code == 302 and response["Location"].startswith("/o/login/?next=")
    page = client.get(response["Location"])
    assert page.status_code == 200 and b"Sign in" in page.content and b'name="next"' in page.content


def test_the_admin_shows_a_new_personal_token_once(admin_client, admin_user):
    response = admin_client.post(
        "/admin/django_mcp/personaltoken/add/",
        {"user": admin_user.pk, "name": "ci", "scope": "mcp", "lifetime_days": 30},
        follow=True,
    )
    [message] = [str(m) for m in response.context["messages"] if "The new token is" in str(m)]
    token = message.split("The new token is ")[1].split(" ")[0]
    row = PersonalToken.objects.get()
    assert token.startswith("mcp_pat_") and token.startswith(row.prefix) and token not in row.digest
    change_page = admin_client.get(f"/admin/django_mcp/personaltoken/{row.pk}/change/")
    assert token.encode() not in change_page.content
    admin_client.post(
        "/admin/django_mcp/personaltoken/", {"action": "revoke", "_selected_action": [row.pk]}, follow=True
    )
    row.refresh_from_db()
    assert row.revoked_at is not None


def test_mcp_token_creates_lists_and_revokes():
    User.objects.create_user("carol")
    out, err = StringIO(), StringIO()
    call_command("mcp_token", "create", "--user", "carol", "--name", "nightly", "--days", "7", stdout=out, stderr=err)
    token = out.getvalue().strip()
    assert token.startswith("mcp_pat_") and "not stored" in err.getvalue()
    row = PersonalToken.objects.get()
    listing = StringIO()
    call_command("mcp_token", "list", stdout=listing)
    assert row.prefix in listing.getvalue() and "usable" in listing.getvalue() and token not in listing.getvalue()
    call_command("mcp_token", "revoke", row.prefix, stdout=StringIO())
    row.refresh_from_db()
    assert row.revoked_at is not None
    with pytest.raises(CommandError, match="No user"):
        call_command("mcp_token", "create", "--user", "nobody", "--name", "x")
    with pytest.raises(CommandError, match="0 usable tokens"):
        call_command("mcp_token", "revoke", row.prefix)


def test_an_authorization_without_scope_gets_the_default_scopes_and_a_token_for_the_endpoint(client):
    """ChatGPT sends no ``scope`` when it reconnects: the grant falls back to the default scopes."""
    import base64
    import hashlib
    from urllib.parse import parse_qs, urlsplit

    user = User.objects.create_user("dora", password="pw")
    client_id = client.post("/o/register/", json.dumps(PUBLIC), content_type="application/json").json()["client_id"]
    client.force_login(user)
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": PUBLIC["redirect_uris"][0],
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": "http://testserver/mcp-oauth",
    }
    consent = client.get("/o/authorize/", query)
    assert consent.status_code == 200
    fields = {key: value for key, value in consent.context["form"].initial.items() if value is not None}
    answer = client.post("/o/authorize/", {**fields, "allow": "Authorize"})
    callback = parse_qs(urlsplit(answer["Location"]).query)
    assert callback["state"] == ["s1"] and callback["iss"] == ["http://testserver"]
    token = client.post(
        "/o/token/",
        {
            "grant_type": "authorization_code",
            "code": callback["code"][0],
            "client_id": client_id,
            "redirect_uri": PUBLIC["redirect_uris"][0],
            "code_verifier": verifier,
            "resource": "http://testserver/mcp-oauth",
        },
    ).json()
    assert set(token["scope"].split()) == {"mcp", "notes:write"}  # DEFAULT_SCOPES: every scope of the block
    assert "offline_access" not in token["scope"]
    from oauth2_provider.models import AccessToken

    assert AccessToken.objects.get(user=user).resource == [
        "http://testserver/mcp-oauth"
    ]  # the audience it was asked for


def test_malformed_registration_metadata_is_refused_not_a_500(client):
    for change in ({"grant_types": [["authorization_code"]]}, {"redirect_uris": 5}, {"response_types": "code"}):
        response = client.post("/o/register/", json.dumps({**PUBLIC, **change}), content_type="application/json")
        assert response.status_code in (400, 401, 403), (change, response.status_code)


@pytest.mark.django_db(transaction=True)  # the endpoint reads the token in a thread of its own
def test_the_admins_revoke_action_takes_effect_at_once_in_its_process(admin_client, admin_user):
    import asyncio

    from django.test import AsyncClient

    from tests.wire import post, request_body

    row, token = PersonalToken.issue(admin_user, "cached")

    def status():
        body = request_body("tools/list")
        headers = {"Authorization": f"Bearer {token}"}
        return asyncio.run(post(AsyncClient(), body, path="/mcp-oauth", headers=headers)).status_code

    assert status() == 200  # now remembered
    admin_client.post("/admin/django_mcp/personaltoken/", {"action": "revoke", "_selected_action": [row.pk]})
    assert status() == 401


def test_staff_may_make_personal_tokens_for_themselves_only(client):
    from django.contrib.auth.models import Permission

    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="add_personaltoken"))
    boss = User.objects.create_superuser("boss", password="pw")
    client.force_login(staff)
    refused = client.post(
        "/admin/django_mcp/personaltoken/add/", {"user": boss.pk, "name": "x", "scope": "mcp", "lifetime_days": 1}
    )
    assert refused.status_code == 200 and not PersonalToken.objects.exists()  # the form's error, shown again
    client.post(
        "/admin/django_mcp/personaltoken/add/", {"user": staff.pk, "name": "x", "scope": "mcp", "lifetime_days": 1}
    )
    assert PersonalToken.objects.get().user == staff


def test_the_sign_in_page_opened_directly_comes_back_to_say_who_is_signed_in(client):
    from django.contrib.auth.models import User

    User.objects.create_user("ada", password="pw-for-ada")
    page = client.get("/o/login/")
    token = page.context["csrf_token"] if page.context else None
    signed_in = client.post("/o/login/", {"username": "ada", "password": "pw-for-ada", "csrfmiddlewaretoken": token})
    assert (signed_in.status_code, signed_in["Location"]) == (302, "/o/login/")  # was /accounts/profile/, a 404
    again = client.get("/o/login/")
    assert "You are signed in as <strong>ada</strong>" in again.content.decode()
