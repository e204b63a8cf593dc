"""The JSON-RPC methods of the core: each gets the request, its parsed params and the ServerContext."""
