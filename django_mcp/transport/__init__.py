"""The HTTP transport: the django-ninja view and the two eras' fronts that turn requests into ``McpRequest``.

``views`` receives every request and runs the ladder once; ``streamable`` serves the 2026-07-28
era, ``handshake`` (with ``sessions``) the handshake era; both answer through ``respond``.
"""
