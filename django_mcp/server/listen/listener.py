"""The shape of a listen stream as the fan-out, the layer's health and the limits see it."""

from __future__ import annotations

from typing import Any, Protocol


class Listener(Protocol):
    """A listen stream (:class:`~.stream.ListenStream`), as the modules that hand it messages or end it see it."""

    subscription_id: str | int | None
    principal: str | None
    joined: list[str]
    """The channel layer groups it is in."""

    def on_layer_message(self, message: dict[str, Any]) -> bool:
        """A message from the layer for one of its groups; False once the stream closed."""
        ...

    def fail(self, reason: str = ...) -> None:
        """End with the -32603 error: it may have missed notifications."""
        ...

    def close(self) -> None:
        """End gracefully: the client gets the listen result."""
        ...
