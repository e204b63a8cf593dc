"""The watch over a loop's channel layer (server/listen/layer_health.py): one per loop and layer."""

from __future__ import annotations

from channels.layers import InMemoryChannelLayer

from django_mcp.server.listen.layer_health import LayerWatch


def test_outside_an_event_loop_there_is_no_watch():
    assert LayerWatch.current() is None


async def test_a_replaced_layer_gets_a_new_watch():
    first, second = InMemoryChannelLayer(), InMemoryChannelLayer()
    old = LayerWatch.of(first)
    assert LayerWatch.of(first) is old and LayerWatch.current() is old
    assert await old.aprobe()  # it listens on a channel of the first layer now
    new = LayerWatch.of(second)  # CHANNEL_LAYERS changed (a test, a reload): the old one is stopped
    assert new is not old and new.layer is second and LayerWatch.current() is new
    assert await new.aprobe()  # the new layer answers its probe
