"""A test-only Django project serving the official MCP conformance suite's fixtures."""
