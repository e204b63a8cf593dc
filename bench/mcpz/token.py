"""Mint a django-mcpz token for the bench's user, no browser flow: ``python -m bench.mcpz.token``.

    BENCH_MCPZ_AUTH=oauth  python -m bench.mcpz.token --resource http://127.0.0.1:PORT/mcp/ --out t.json
    BENCH_MCPZ_AUTH=tokens python -m bench.mcpz.token --out t.json

Migrates first (idempotent). ``oauth``: an ``AccessToken`` row as the token endpoint's
``issue_tokens`` would write it (a registered ``Client``, the user, the resource the token is for);
``oauth_auth`` accepts it only on a request whose absolute URL is ``resource`` (scheme, Host header
with port, path). ``tokens``: ``bearer_tokens.Token.create``, as ``manage.py mcpz bearer-tokens create``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.mcpz.settings")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--resource", help="oauth: the MCP endpoint's URL, e.g. http://127.0.0.1:8000/mcp/")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from django.contrib.auth.models import User

    user, _ = User.objects.get_or_create(username="bench")
    if settings.AUTH == "oauth":
        from django_mcpz.oauth.models import AccessToken, Client

        if not args.resource:
            parser.error("--resource is required with BENCH_MCPZ_AUTH=oauth")
        client, _ = Client.objects.get_or_create(
            client_id="bench-loadgen", defaults={"kind": Client.Kind.REGISTERED, "name": "bench"}
        )
        _, value = AccessToken.create(lifetime=dt.timedelta(days=1), client=client, user=user, resource=args.resource)
    elif settings.AUTH == "tokens":
        from django_mcpz.bearer_tokens.models import Token

        _, value = Token.create(name="bench", user=user)
    else:
        raise SystemExit("BENCH_MCPZ_AUTH is not set: the server is public")
    with open(args.out, "w") as fh:
        json.dump({"token": value}, fh)


if __name__ == "__main__":
    main()
