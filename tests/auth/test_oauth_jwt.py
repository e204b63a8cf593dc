"""JWT access tokens of an external issuer (RFC 9068): JWKS, iss, aud, exp, scopes, the user, key rotation."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from asgiref.sync import sync_to_async
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth.models import User
from django.test import override_settings
from jwt.algorithms import RSAAlgorithm

from tests.wire import assert_wire, post, request_body

pytestmark = pytest.mark.django_db(transaction=True)

ISSUER = "https://idp.example.com/"
RESOURCE = "http://testserver/mcp-oauth"


class Issuer:
    """An identity provider's JWKS endpoint on 127.0.0.1, and tokens signed with its keys."""

    def __init__(self) -> None:
        self.keys: dict[str, rsa.RSAPrivateKey] = {}
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetches += 1
                keys = []
                for kid, key in issuer.keys.items():
                    jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
                    keys.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
                body = json.dumps({"keys": keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add_key(self, kid: str) -> None:
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def token(self, kid: str = "k1", key: rsa.RSAPrivateKey | None = None, **claims: object) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "scope": "mcp", "iat": now, "exp": now + 300}
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, key or self.keys[kid], algorithm="RS256", headers={"kid": kid, "typ": "at+jwt"})


@pytest.fixture(scope="module")
def issuer():
    idp = Issuer()
    idp.add_key("k1")
    yield idp
    idp.server.shutdown()


@pytest.fixture
def jwt_settings(issuer, settings):
    jwt = {"ISSUER": ISSUER, "JWKS_URL": issuer.url, "JWKS_REFRESH_COOLDOWN_SECONDS": 0}
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "OAUTH_JWT": jwt}


@pytest.fixture
def alice():
    return User.objects.create_user("alice")


async def _call(async_client, token, name="whoami", arguments=None):
    body = request_body("tools/call", {"name": name, "arguments": arguments or {}})
    return await post(async_client, body, path="/mcp-oauth", headers={"Authorization": f"Bearer {token}"})


async def test_a_jwt_of_the_issuer_acts_as_the_user_its_subject_names(async_client, issuer, jwt_settings, alice):
    response = await _call(async_client, issuer.token())
    assert response.status_code == 200, response.content
    assert json.loads(response.content)["result"]["content"][0]["text"] == "alice"


async def test_the_metadata_names_the_external_issuer(async_client, jwt_settings):
    document = json.loads((await async_client.get("/.well-known/oauth-protected-resource/mcp-oauth")).content)
    assert document["authorization_servers"] == [ISSUER]


@pytest.mark.parametrize(
    ("case", "claims"),
    [
        ("another audience", {"aud": "http://testserver/elsewhere"}),
        ("another issuer", {"iss": "https://evil.example.com/"}),
        ("expired", {"exp": int(time.time()) - 120}),
        ("no expiry", {"exp": None}),
        ("no such user", {"sub": "mallory"}),
        ("no subject", {"sub": None}),
    ],
)
async def test_jwts_that_are_not_good_here_are_401(async_client, issuer, jwt_settings, alice, case, claims):
    response = await _call(async_client, issuer.token(**claims))
    assert response.status_code == 401, case
    assert_wire(json.loads(response.content), "JSONRPCErrorResponse")
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


async def test_a_jwt_signed_by_another_key_with_a_known_kid_is_401(async_client, issuer, jwt_settings, alice):
    forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert (await _call(async_client, issuer.token(key=forger))).status_code == 401


async def test_scopes_come_from_scope_or_scp(async_client, issuer, jwt_settings, alice):
    assert (await _call(async_client, issuer.token(scope="openid"))).status_code == 403
    listed = await _call(
        async_client, issuer.token(scope=None, scp=["mcp", "notes:write"]), "write_note", {"text": "x"}
    )
    assert json.loads(listed.content)["result"]["content"][0]["text"] == "alice wrote x"


async def test_a_new_signing_key_is_fetched_once_and_then_cached(async_client, issuer, jwt_settings, alice):
    assert (await _call(async_client, issuer.token())).status_code == 200
    before = issuer.fetches
    issuer.add_key("k2")  # the issuer rotates its keys
    assert (await _call(async_client, issuer.token("k2"))).status_code == 200
    assert (await _call(async_client, issuer.token("k2"))).status_code == 200
    assert issuer.fetches == before + 1


async def test_an_unreachable_jwks_is_503_not_401(async_client, issuer, settings, alice):
    dead = "http://127.0.0.1:9/jwks.json"  # the discard port: nothing listens
    settings.DJANGO_MCP = {**settings.DJANGO_MCP, "OAUTH_JWT": {"ISSUER": ISSUER, "JWKS_URL": dead}}
    response = await _call(async_client, issuer.token())
    assert response.status_code == 503
    assert_wire(json.loads(response.content), "JSONRPCErrorResponse")


async def test_an_opaque_token_still_goes_to_the_other_verifiers(async_client, issuer, jwt_settings, alice):
    from django_mcp.models import PersonalToken

    _, token = await sync_to_async(PersonalToken.issue)(alice, "script")
    assert (await _call(async_client, token)).status_code == 200
    assert (await _call(async_client, "not-a-jwt")).status_code == 401


@override_settings(DJANGO_MCP={"OAUTH_JWT": {"ISSUER": ISSUER}})
def test_an_incomplete_jwt_setting_is_a_check_error():
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    with pytest.raises(SystemCheckError, match="OAUTH_JWT"):
        call_command("check")


async def test_a_remembered_jwt_is_still_checked_for_the_resource_it_is_used_at(
    async_client, issuer, jwt_settings, alice
):
    token = issuer.token()  # for http://testserver/mcp-oauth
    assert (await _call(async_client, token)).status_code == 200
    body = request_body("tools/call", {"name": "whoami"})
    from tests.wire import asgi_exchange, asgi_scope

    # The same token, at http://localhost/mcp-oauth:
    scope = asgi_scope(body, {"Authorization": f"Bearer {token}"}, host="localhost", path="/mcp-oauth")
    elsewhere = await asgi_exchange(scope, json.dumps(body).encode())
    assert elsewhere.status_code == 401  # another resource, remembered or not
