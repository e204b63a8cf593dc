"""The MCP 2026-07-28 wire, with no Django in it.

JSON-RPC envelopes, error codes, the request validation ladder, routing-header
decoding and SSE framing. Everything here is pure: it takes bytes, strings and
mappings and returns values or raises :class:`~django_mcp.protocol.errors.McpJsonRpcError`.
"""
