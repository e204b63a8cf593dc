"""System checks for deployment traps: channel layers, task leases, persistent connections."""

import pytest
from django.core import checks
from django.test import SimpleTestCase, override_settings

from django_mcp import McpServer, ToolRegistry
from django_mcp.checks import check_channel_layer, check_persistent_connections, check_servers, check_settings
from django_mcp.tasks import McpTasks
from django_mcp.tasks.checks import check_lease_outlasts_reconnection, check_task_settings

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
        assert ids(check_task_settings()) == ["django_mcp.E004"]
        assert check_settings() == []  # the core knows nothing of leases

    @override_settings(DJANGO_MCP={"TASK_LEASE_SECONDS": "soon"})
    def test_lease_settings_that_cannot_be_read_are_left_to_e002(self):
        assert ids(check_settings()) == ["django_mcp.E002"]
        assert check_task_settings() == [] and check_lease_outlasts_reconnection() == []

    def test_e009_says_nothing_of_a_database_it_cannot_reach(self):
        from unittest import mock

        from django.db import DatabaseError

        from django_mcp.tasks.checks import check_migrations_applied

        unreachable = DatabaseError("could not connect to server")
        with mock.patch("django_mcp.tasks.checks.MigrationExecutor", side_effect=unreachable):
            assert check_migrations_applied(databases=["default"]) == []  # Django's own checks say so

    @override_settings(DJANGO_MCP={"TASK_LEASE_SECONDS": 10, "TASK_LEASE_RENEW_SECONDS": 3})
    def test_sane_lease(self):
        assert check_settings() == []
        assert check_task_settings() == []

    @override_settings(DJANGO_MCP={"TASK_LEASE_SECONDS": 0})
    def test_non_positive_lease_is_e002(self):
        # The tasks section's keys are validated by the same settings check as the core's.
        [error] = check_settings()
        assert error.id == "django_mcp.E002" and "TASK_LEASE_SECONDS" in error.msg

    @override_settings(DJANGO_MCP={"TASK_LEASE_SECOND": 3})
    def test_a_key_nobody_claims_is_e002(self):
        [error] = check_settings()
        assert error.id == "django_mcp.E002" and "TASK_LEASE_SECOND" in error.msg


def _postgres(**options):
    return {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "x", "OPTIONS": options}}


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
class LeaseAgainstReconnectionChecks(SimpleTestCase):
    """W022: after an outage a live owner renews within a renew interval plus its wait for a connection."""

    @override_settings(DATABASES=_postgres(pool={"timeout": 5, "reconnect_timeout": 5}, connect_timeout=3))
    def test_the_default_lease_with_the_documented_pool_is_fine(self):
        assert check_lease_outlasts_reconnection() == []  # 15 s > 5 + 5 + 3

    @override_settings(
        DATABASES=_postgres(pool={"timeout": 5}, connect_timeout=2),
        DJANGO_MCP={"TASK_LEASE_SECONDS": 4, "TASK_LEASE_RENEW_SECONDS": 1.3},
    )
    def test_w022_a_lease_shorter_than_the_wait_for_a_connection(self):
        [warning] = check_lease_outlasts_reconnection()
        assert warning.id == "django_mcp.W022" and warning.obj == "default"
        assert "TASK_LEASE_RENEW_SECONDS (1.3 s) + the pool's timeout (5 s) + connect_timeout (2 s)" in warning.msg
        assert "longer than 8.3 s" in warning.hint

    @override_settings(DATABASES=_postgres(pool=True))
    def test_w022_psycopg_pool_default_wait_outlasts_the_default_lease(self):
        [warning] = check_lease_outlasts_reconnection()
        assert "the pool's timeout (30 s)" in warning.msg

    @override_settings(
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        DJANGO_MCP={"TASK_LEASE_SECONDS": 4, "TASK_LEASE_RENEW_SECONDS": 1.3},
    )
    def test_sqlite_has_no_connection_to_wait_for(self):
        assert check_lease_outlasts_reconnection() == []

    @override_settings(
        DATABASES=_postgres(connect_timeout="soon"),
        DJANGO_MCP={"TASK_LEASE_SECONDS": 1, "TASK_LEASE_RENEW_SECONDS": 0.5},
    )
    def test_an_unreadable_timeout_is_left_to_the_driver(self):
        assert check_lease_outlasts_reconnection() == []


def _server_errors(server):
    return [m for m in check_servers() if m.obj in {t.name for t in server.tools}]


class ServerChecks(SimpleTestCase):
    def test_e006_task_tool_on_a_server_without_the_tasks_plugin(self):
        tools = ToolRegistry(name="e006")
        tools.register(lambda request: "x", name="needs_tasks", task_support="required")
        server = McpServer(tools=tools, urls_namespace="e006")
        [error] = _server_errors(server)
        assert error.id == "django_mcp.E006"
        assert "task_support='required' is not understood by any extension installed on <McpServer 'e006'>" in error.msg
        assert "McpTasks()" in error.hint

    def test_e006_a_bad_value_for_an_option_the_plugin_claims(self):
        tools = ToolRegistry(name="e006b")
        tools.register(lambda request: "x", name="sometimes", task_support="sometimes")
        server = McpServer(tools=tools, extension_plugins=[McpTasks()], urls_namespace="e006b")
        [error] = _server_errors(server)
        assert error.id == "django_mcp.E006" and "task_support must be one of" in error.msg

    def test_e006_an_empty_task_status_message(self):
        tools = ToolRegistry(name="e006d")
        tools.register(lambda request: "x", name="blank", task_support="optional", task_status_message=" ")
        server = McpServer(tools=tools, extension_plugins=[McpTasks()], urls_namespace="e006d")
        [error] = _server_errors(server)
        assert error.id == "django_mcp.E006" and "task_status_message must be a non-empty string" in error.msg

    def test_a_task_tool_with_the_plugin_is_clean(self):
        tools = ToolRegistry(name="e006c")
        tools.register(lambda request: "x", name="fine", task_support="optional", run_body_as_task=False)
        server = McpServer(tools=tools, extension_plugins=[McpTasks()], urls_namespace="e006c")
        assert _server_errors(server) == []

    @override_settings(CHANNEL_LAYERS={})
    def test_w006_tasks_without_a_channel_layer(self):
        McpServer(tools=ToolRegistry(name="w006"), extension_plugins=[McpTasks()], urls_namespace="w006")
        warnings = [m for m in check_servers() if m.id == "django_mcp.W006" and m.obj == "w006"]
        assert len(warnings) == 1 and "CHANNEL_LAYERS" in warnings[0].hint

    def test_e007_tasks_plugin_without_the_app(self):
        from django.apps import apps
        from django.core.exceptions import ImproperlyConfigured

        with self.modify_settings(INSTALLED_APPS={"remove": ["django_mcp"]}):
            assert not apps.is_installed("django_mcp")
            with pytest.raises(ImproperlyConfigured, match=r"django_mcp\.E007"):
                McpTasks()


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


class SessionCacheChecks(SimpleTestCase):
    LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

    @override_settings(CACHES=LOCMEM, DEBUG=False)
    def test_w007_sessions_in_a_per_process_cache(self):
        from django_mcp.checks import check_session_cache

        [warning] = check_session_cache()
        assert (warning.id, warning.obj) == ("django_mcp.W007", "default")

    @override_settings(CACHES=LOCMEM, DEBUG=False, DJANGO_MCP={"PROTOCOL_VERSIONS": ["2026-07-28"]})
    def test_no_sessions_no_warning(self):
        from django_mcp.checks import check_session_cache

        assert check_session_cache() == []

    @override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "t"}})
    def test_a_shared_cache_is_fine(self):
        from django_mcp.checks import check_session_cache

        assert check_session_cache() == []
