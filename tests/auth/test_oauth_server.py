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
    client_id = client.post("/o/register/", json.dumps(PUBLIC), content_type="application/json").json()["client_id"]
    query = {"client_id": client_id, "response_type": "code", "redirect_uri": PUBLIC["redirect_uris"][0]}
    response = client.get("/o/authorize/", {**query, "code_challenge": "c" * 43, "code_challenge_method": "S256"})
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


def _authorized(client, user, **extra: str) -> tuple[str, str]:
    """Register a public client, sign ``user`` in and allow it: the client ID and the authorization code."""
    import base64
    import hashlib
    from urllib.parse import parse_qs, urlsplit

    client_id = client.post("/o/register/", json.dumps(PUBLIC), content_type="application/json").json()["client_id"]
    client.force_login(user)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": PUBLIC["redirect_uris"][0],
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": "http://testserver/mcp-oauth",
        **extra,
    }
    consent = client.get("/o/authorize/", query)
    assert consent.status_code == 200
    fields = {key: value for key, value in consent.context["form"].initial.items() if value is not None}
    answer = client.post("/o/authorize/", {**fields, "allow": "Authorize"})
    callback = parse_qs(urlsplit(answer["Location"]).query)
    assert callback["state"] == ["s1"] and callback["iss"] == ["http://testserver"]
    return client_id, callback["code"][0]


VERIFIER = "v" * 64


def _exchange(client, client_id: str, code: str):
    return client.post(
        "/o/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "client_id": client_id,
            "redirect_uri": PUBLIC["redirect_uris"][0],
            "code_verifier": VERIFIER,
            "resource": "http://testserver/mcp-oauth",
        },
    )


def test_an_authorization_without_scope_gets_the_base_scope_and_a_token_for_the_endpoint(client):
    """ChatGPT sends no ``scope`` when it reconnects: the grant falls back to the endpoint's base scope; a
    tool's extra scope (``notes:write``) comes by step-up, never unasked."""
    user = User.objects.create_user("dora", password="pw")
    client_id, code = _authorized(client, user)
    token = _exchange(client, client_id, code).json()
    assert token["scope"] == "mcp"  # DEFAULT_SCOPES: the base scope (was every scope of the block)
    from oauth2_provider.models import AccessToken

    assert AccessToken.objects.get(user=user).resource == [
        "http://testserver/mcp-oauth"
    ]  # the audience it was asked for


def test_a_code_used_twice_is_refused_and_revokes_the_tokens_of_its_first_use(client):
    """RFC 6749 §4.1.2; tokens obtained since by refreshing them are of the same family and go too."""
    from oauth2_provider.models import AccessToken, RefreshToken

    user = User.objects.create_user("eve", password="pw")
    client_id, code = _authorized(client, user, scope="mcp notes:write")
    first = _exchange(client, client_id, code).json()
    refreshed = client.post(
        "/o/token/", {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client_id}
    ).json()
    assert refreshed["access_token"]
    again = _exchange(client, client_id, code)
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert not AccessToken.objects.filter(user=user).exists()  # (the registration's own token stays)
    assert not RefreshToken.objects.filter(user=user, revoked__isnull=True).exists()


def test_a_code_never_issued_revokes_nothing(client):
    from oauth2_provider.models import AccessToken

    user = User.objects.create_user("fay", password="pw")
    client_id, code = _authorized(client, user)
    assert _exchange(client, client_id, code).status_code == 200
    assert _exchange(client, client_id, "forged-" + code).json()["error"] == "invalid_grant"
    assert AccessToken.objects.filter(user=user).count() == 1


def test_losing_the_race_to_exchange_a_code_revokes_both_token_sets():
    """Two exchanges of one code at once: the one that finds the code gone revokes the family."""
    from oauth2_provider.models import RefreshToken
    from oauthlib.common import Request
    from oauthlib.oauth2 import InvalidGrantError

    from django_mcp.auth.validator import McpOAuth2Validator, code_family

    app = Application.objects.create(client_id="c", client_type="public", authorization_grant_type="authorization-code")
    family = code_family("c", "the-code")
    gus = User.objects.create_user("gus")
    live = RefreshToken.objects.create(user=gus, application=app, token="r1", token_family=family)
    request = Request("http://testserver/o/token/")
    request.client = app
    with pytest.raises(InvalidGrantError):
        McpOAuth2Validator().invalidate_authorization_code("c", "the-code", request)
    live.refresh_from_db()
    assert live.revoked is not None


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


def _registered(client, age_days: float) -> Application:
    from datetime import timedelta

    from django.utils import timezone

    client_id = client.post("/o/register/", json.dumps(PUBLIC), content_type="application/json").json()["client_id"]
    Application.objects.filter(client_id=client_id).update(created=timezone.now() - timedelta(days=age_days))
    return Application.objects.get(client_id=client_id)


def test_stale_anonymous_registrations_are_cleared_and_used_ones_kept(client):
    from oauth2_provider.models import AccessToken

    stale, fresh, used = _registered(client, 8), _registered(client, 1), _registered(client, 30)
    AccessToken.objects.create(
        user=User.objects.create_user("hal"), application=used, token="t-used", expires=used.created
    )
    made_here = Application.objects.create(
        name="desk", client_type="public", authorization_grant_type="authorization-code"
    )
    Application.objects.filter(pk=made_here.pk).update(created=used.created)
    out = StringIO()
    call_command("mcp_clear_registrations", stdout=out)  # OAUTH_REGISTRATION_RETENTION_DAYS: 7
    assert out.getvalue().strip() == "Deleted 1 stale client registration(s)."
    assert set(Application.objects.values_list("pk", flat=True)) == {fresh.pk, used.pk, made_here.pk}
    assert not Application.objects.filter(pk=stale.pk).exists()
    assert AccessToken.objects.filter(application_id=stale.pk).count() == 0  # its registration token went too
    call_command("mcp_clear_registrations", "--days", "0", stdout=out)
    assert set(Application.objects.values_list("pk", flat=True)) == {used.pk, made_here.pk}


def test_clearing_registrations_refuses_a_negative_age():
    with pytest.raises(CommandError, match="0 or more"):
        call_command("mcp_clear_registrations", "--days", "-1")
