"""Sign-in: the resource server, token verifiers, the authorization server, their checks."""
