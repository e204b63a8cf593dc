"""The HTTP front of both eras: statuses, sessions, the wire as sent, WSGI, auth on the endpoint."""
