"""System checks for deployment traps: channel layers, task leases, persistent connections."""

import pytest
from django.core import checks
from django.test import SimpleTestCase, override_settings

from django_mcp.checks import check_channel_layer, check_persistent_connections, check_settings

REDIS = {"default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer"}}
MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def ids(messages):
    return [m.id for m in messages]


class ChannelLayerChecks(SimpleTestCase):
    @override_settings(CHANNEL_LAYERS={})
    def test_w004_no_channel_layer(self):
        [message] = check_channel_layer()
        assert message.id == "django_mcp.W004"
        assert message.level == checks.WARNING
        assert "RedisPubSubChannelLayer" in message.hint

    @override_settings(CHANNEL_LAYERS=MEMORY, DEBUG=False)
    def test_w005_in_memory_layer_outside_debug(self):
        assert ids(check_channel_layer()) == ["django_mcp.W005"]

    @override_settings(CHANNEL_LAYERS=MEMORY, DEBUG=True)
    def test_in_memory_layer_is_fine_under_debug(self):
        assert check_channel_layer() == []

    @override_settings(CHANNEL_LAYERS=REDIS, DEBUG=False)
    def test_redis_layer_is_fine(self):
        assert check_channel_layer() == []


class LeaseChecks(SimpleTestCase):
    @override_settings(DJANGO_MCP={"TASK_LEASE_SECONDS": 10, "TASK_LEASE_RENEW_SECONDS": 10})
    def test_e004_renewal_not_shorter_than_the_lease(self):
        assert ids(check_settings()) == ["django_mcp.E004"]

    @override_settings(DJANGO_MCP={"TASK_LEASE_SECONDS": 10, "TASK_LEASE_RENEW_SECONDS": 3})
    def test_sane_lease(self):
        assert check_settings() == []

    @override_settings(DJANGO_MCP={"TASK_LEASE_SECONDS": 0})
    def test_non_positive_lease_is_e002(self):
        assert ids(check_settings()) == ["django_mcp.E002"]


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
class ConnectionChecks(SimpleTestCase):
    @override_settings(
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "x", "CONN_MAX_AGE": 60}},
        ASGI_APPLICATION="tests.asgi.application",
    )
    def test_i001_persistent_connections_under_asgi(self):
        [message] = check_persistent_connections()
        assert (message.id, message.level, message.obj) == ("django_mcp.I001", checks.INFO, "default")

    @override_settings(
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "x", "CONN_MAX_AGE": 0}},
        ASGI_APPLICATION="tests.asgi.application",
    )
    def test_no_persistent_connections(self):
        assert check_persistent_connections() == []
