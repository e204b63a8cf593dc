"""``subscriptions/listen`` streams (and the handshake era's ``GET`` stream): see :mod:`.stream`."""

from .layer_health import LayerUnavailable, LayerWatch
from .limits import admit_stream, close_listen_streams, open_listen_streams, write_budget
from .stream import CONTROL_TYPE, ListenStream

__all__ = [
    "CONTROL_TYPE",
    "LayerUnavailable",
    "LayerWatch",
    "ListenStream",
    "admit_stream",
    "close_listen_streams",
    "open_listen_streams",
    "write_budget",
]
