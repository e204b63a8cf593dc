"""The MCP server: registries, dispatch, request context and the extension interface."""
