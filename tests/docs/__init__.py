"""The README and docs pages, run as written."""
