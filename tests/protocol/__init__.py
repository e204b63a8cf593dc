"""The wire rules alone: JSON-RPC, headers, the validation ladder (no Django)."""
