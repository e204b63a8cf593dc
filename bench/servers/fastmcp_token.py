"""The fastmcp target's stand-in authorization server: a fresh RSA key pair and one RS256 access token.

Run in the fastmcp venv (cryptography + joserfc come with fastmcp):

    python -m bench.servers.fastmcp_token --public-key key.pem --out token.json

Writes the public key (PEM) for the server's ``BENCH_JWT_PUBLIC_KEY_FILE`` and ``{"token": ...}``
for the load generator's ``Authorization: Bearer``. Claims as an OAuth server issues them:
``iss``, ``aud``, ``sub``, ``iat``, ``exp`` (1 day), ``scope``, ``client_id``.
"""

from __future__ import annotations

import argparse
import json

from fastmcp.server.auth.providers.jwt import RSAKeyPair

from bench.servers.fastmcp_server import JWT_AUDIENCE, JWT_ISSUER


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--public-key", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    pair = RSAKeyPair.generate()
    token = pair.create_token(
        subject="bench",
        issuer=JWT_ISSUER,
        audience=JWT_AUDIENCE,
        scopes=["mcp"],
        expires_in_seconds=86400,
        additional_claims={"client_id": "bench-loadgen"},
    )
    with open(args.public_key, "w") as fh:
        fh.write(pair.public_key)
    with open(args.out, "w") as fh:
        json.dump({"token": token}, fh)


if __name__ == "__main__":
    main()
