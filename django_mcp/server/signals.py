"""Django signals of the MCP server a project can connect to (``django_mcp.tool_called``)."""

from __future__ import annotations

from django.dispatch import Signal

tool_called = Signal()
"""A ``tools/call`` ended, in the process that served it.

Sent with ``sender`` the :class:`~django_mcp.Tool` and the keyword arguments ``request`` (the
:class:`~django_mcp.McpRequest`: who called, through ``request.user`` / ``request.auth``),
``tool`` (its name), ``outcome`` (``"result"``, ``"error"`` for an ``isError`` result, ``"task"``
for a task's handle, ``"input_required"`` for an MRTR round, ``"refused"`` for a JSON-RPC error,
``"cancelled"`` when the client went away)
``duration`` (seconds, until the answer was ready; a task's body runs on after it) and ``definition``
(the :class:`~django_mcp.Tool` itself).
"""
