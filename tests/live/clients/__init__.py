"""Official MCP clients driven against a running django-mcp server (``tests/live/test_clients.py``).

``install.py`` installs them into a cache; each script drives one server URL,
prints one JSON summary on stdout and exits non-zero on failure:

* ``ts_client.mjs`` — the TypeScript SDK 1.x (``@modelcontextprotocol/sdk``),
  ``StreamableHTTPClientTransport``: the handshake era only.
* ``ts2_client.mjs`` — the TypeScript SDK 2.x (``@modelcontextprotocol/client``)
  in its default mode (``"legacy"``: the handshake era), with the task tools.
* ``py_client.py`` — the Python SDK ``mcp`` 2.x, ``mode="legacy"`` or ``mode="auto"``.
* ``fastmcp_client.py`` — FastMCP's client with fastmcp-tasks: a task run to
  completion, another cancelled.
"""
