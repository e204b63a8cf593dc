"""A user at a browser, for the sign-in tests: opens an authorization URL, signs in, allows the client."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx

_INPUT = re.compile(r"<input[^>]*>", re.I)


def form_fields(html: str) -> dict[str, str]:
    """The named inputs of a page's forms (the login form, or the consent form's hidden fields)."""
    fields = {}
    for tag in _INPUT.findall(html):
        name, value = re.search(r'name="([^"]*)"', tag), re.search(r'value="([^"]*)"', tag)
        if name:
            fields[unescape(name.group(1))] = unescape(value.group(1)) if value else ""
    return fields


def sign_in_and_allow(url: str, redirect_uri: str, username: str, password: str) -> dict[str, str]:
    """Follow ``url`` through the login page and the consent page; the redirect's query (code, state, iss)."""
    with httpx.Client(follow_redirects=False, timeout=20) as web:
        response = web.get(url)
        for _ in range(10):
            location = response.headers.get("location")
            if response.is_redirect and location:
                if location.startswith(redirect_uri):
                    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}
                response = web.get(urljoin(str(response.url), location))
                continue
            fields, target = form_fields(response.text), str(response.url)
            if "password" in fields:
                fields.update(username=username, password=password)
            else:
                fields["allow"] = "Authorize"
            response = web.post(target, data=fields, headers={"Referer": target})
    raise AssertionError(f"no redirect to {redirect_uri} after signing in and allowing")
