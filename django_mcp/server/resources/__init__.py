"""Resources: their definitions, their registry and their JSON-RPC methods."""
