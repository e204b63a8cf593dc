"""Sign-in's system checks: an open endpoint in production, an authorization server some client cannot use,
token auth without its metadata, a canonical URL that is not https or not known."""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import override_settings

from django_mcp import McpServer
from django_mcp.auth import BearerAuth, authorization_server_settings
from django_mcp.auth.checks import (
    check_authorization_server,
    check_canonical_url,
    check_endpoint_auth,
    check_resource_metadata,
)

GOOD = authorization_server_settings()


def ids(messages):
    return [m.id for m in messages]


def only(*servers):
    return mock.patch("django_mcp.auth.checks.built_servers", return_value=list(servers))


@override_settings(DEBUG=False)
def test_e010_an_endpoint_anyone_can_call_in_production():
    open_server = McpServer(urls_namespace="open_for_check")
    with only(open_server, McpServer(auth=BearerAuth(), urls_namespace="closed_for_check")):
        [message] = check_endpoint_auth()
    assert message.id == "django_mcp.E010" and message.obj is open_server
    assert "django_mcp.auth.BearerAuth" in message.hint and "ALLOW_UNAUTHENTICATED" in message.hint


@override_settings(DEBUG=True)
def test_no_e010_under_debug():
    with only(McpServer(urls_namespace="open_debug")):
        assert check_endpoint_auth() == []


@override_settings(DEBUG=False, DJANGO_MCP={"ALLOW_UNAUTHENTICATED": True})
def test_no_e010_when_the_opt_out_says_the_endpoint_is_meant_to_be_open():
    with only(McpServer(urls_namespace="open_on_purpose")):
        assert check_endpoint_auth() == []


def test_e010_is_a_deployment_check():
    from django.core.checks import registry

    assert check_endpoint_auth in registry.registry.get_checks(include_deployment_checks=True)
    assert check_endpoint_auth not in registry.registry.get_checks(include_deployment_checks=False)


def test_the_settings_block_passes_every_authorization_server_check():
    assert check_authorization_server() == []  # tests/settings.py uses authorization_server_settings()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"PKCE_REQUIRED": False}, "django_mcp.E011"),
        ({"COMPLIANT_BCP_RFC9700_PKCE_METHOD": False}, "django_mcp.E012"),
        ({"CIMD_ENABLED": False, "DCR_ENABLED": False}, "django_mcp.E013"),
        ({"OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["client_secret_basic"]}, "django_mcp.E014"),
        ({"COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": False}, "django_mcp.W015"),
        # A project that loosens http redirects beyond loopback (django-oauth-toolkit's own validator).
        ({"OAUTH2_VALIDATOR_CLASS": "oauth2_provider.oauth2_validators.OAuth2Validator"}, "django_mcp.W020"),
        ({"DEFAULT_SCOPES": ["notes:write"]}, "django_mcp.W021"),
    ],
)
def test_an_authorization_server_some_client_cannot_use(change, expected):
    with override_settings(OAUTH2_PROVIDER={**GOOD, **change}):
        assert ids(check_authorization_server()) == [expected]


def test_dcr_alone_or_cimd_alone_is_enough():
    for change in ({"CIMD_ENABLED": False}, {"DCR_ENABLED": False}):
        with override_settings(OAUTH2_PROVIDER={**GOOD, **change}):
            assert check_authorization_server() == []


def test_no_authorization_server_checks_when_this_project_is_not_one():
    with override_settings(ROOT_URLCONF="tests.urls_root"), override_settings(OAUTH2_PROVIDER={"PKCE_REQUIRED": False}):
        assert check_authorization_server() == []


def test_e015_bearer_auth_without_its_metadata():
    with only(McpServer(auth=BearerAuth(), urls_namespace="no_prm")):
        assert check_resource_metadata() == []  # tests/urls.py includes django_mcp.auth.urls
        with override_settings(ROOT_URLCONF="tests.urls_root"):
            [message] = check_resource_metadata()
    assert message.id == "django_mcp.E015" and 'include("django_mcp.auth.urls")' in message.hint


@override_settings(DEBUG=False)
def test_e016_and_w016_the_canonical_url():
    with only(McpServer(auth=BearerAuth(), urls_namespace="canonical")):
        with override_settings(DJANGO_MCP={"OAUTH_RESOURCE_URL": "http://mcp.example.com/mcp"}):
            assert ids(check_canonical_url()) == ["django_mcp.E016"]
        with override_settings(DJANGO_MCP={"OAUTH_RESOURCE_URL": "https://mcp.example.com/mcp"}):
            assert check_canonical_url() == []
        assert ids(check_canonical_url()) == ["django_mcp.W016"]
        with override_settings(SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https")):
            assert check_canonical_url() == []
    with only(McpServer(urls_namespace="no_bearer")):
        assert check_canonical_url() == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"OAUTH_SCOPES": ["mcp", "has space"]}, "not OAuth scope tokens"),
        ({"OAUTH_SCOPES": ["offline_access"]}, "offline_access"),
        ({"OAUTH_RESOURCE_URL": "mcp.example.com/mcp"}, "absolute http(s) URL"),
        ({"OAUTH_RESOURCE_URL": "https://mcp.example.com/mcp?x=1"}, "absolute http(s) URL"),
        ({"OAUTH_JWT": {"ISSUER": "https://idp/", "JWKS_URL": "https://idp/k", "NOPE": 1}}, "Extra inputs"),
    ],
)
def test_bad_sign_in_settings_are_e002(value, message):
    from django_mcp.checks import check_settings

    with override_settings(DJANGO_MCP=value):
        [error] = check_settings()
    assert error.id == "django_mcp.E002" and message in error.msg


def test_check_deploy_says_nothing_of_sign_in_with_the_documented_settings(settings):
    # oauth2_provider.W007 (refresh-token replay detection off) and W008 (http redirects) printed on every
    # check --deploy before; W008 is silenced in the documented settings, with its reason.
    import re
    from pathlib import Path

    from django.core.checks import run_checks

    doc = (Path(__file__).resolve().parents[2] / "docs" / "sign-in.md").read_text(encoding="utf-8")
    silenced = re.search(r"^SILENCED_SYSTEM_CHECKS = \[\n(.*?)^\]", doc, re.M | re.S).group(1)
    assert re.search(r'# .*loopback.*\n\s+"oauth2_provider.W008",', silenced, re.S)  # with its reason above it
    settings.SILENCED_SYSTEM_CHECKS = re.findall(r'"([\w.]+)"', silenced)
    settings.OAUTH2_PROVIDER = authorization_server_settings({"mcp": "Use the MCP tools"})
    found = {m.id for m in run_checks(include_deployment_checks=True) if not m.is_silenced()}
    assert not {i for i in found if i.startswith("oauth2_provider.") or i in ("django_mcp.W020", "django_mcp.W021")}
    assert authorization_server_settings()["REFRESH_TOKEN_REUSE_PROTECTION"] is True


def test_base_scopes_must_be_among_the_scopes():
    assert authorization_server_settings({"read": "Read"})["DEFAULT_SCOPES"] == ["read"]  # no "mcp": all
    with pytest.raises(ValueError, match="not among the scopes"):
        authorization_server_settings({"mcp": "Use"}, base_scopes=["billing"])
