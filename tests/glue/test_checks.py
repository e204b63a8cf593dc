"""System checks (django_mcp.E001-E003, W001-W003), in the style of django-debug-toolbar's tests/test_checks.py."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

import pytest
from django.conf import settings
from django.core import checks
from django.core.checks import Error, Tags, run_checks
from django.core.checks.registry import registry as check_registry
from django.test import SimpleTestCase, override_settings

from django_mcp.checks import check_asgi, check_settings, check_sqlite
from django_mcp.endpoint import servers
from django_mcp.tasks import EXTENSION_ID

SQLITE_OK = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": ":memory:",
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
    }
}
SQLITE_HINT = (
    'Set OPTIONS = {"transaction_mode": "IMMEDIATE", "timeout": 20, '
    '"init_command": "PRAGMA journal_mode=WAL;"} so concurrent '
    "requests wait for the write lock instead of failing with 'database is locked'."
)
E002_HINT = "See the settings reference in django-mcp's docs/settings.md."


def ids(messages) -> list[str]:
    return [m.id for m in messages]


def mcp_ids(messages) -> list[str]:
    return sorted(m.id for m in messages if (m.id or "").startswith("django_mcp."))


class ChecksRegisteredTestCase(SimpleTestCase):
    def test_checks_are_registered_with_tags(self):
        registered = check_registry.registered_checks
        assert check_settings in registered
        assert check_sqlite in registered
        assert check_asgi in registered
        assert list(check_settings.tags) == [Tags.compatibility]
        assert list(check_asgi.tags) == [Tags.compatibility]
        assert list(check_sqlite.tags) == [Tags.database]

    @override_settings(
        DJANGO_MCP={"PAGE_SIZE": 0},
        CHANNEL_LAYERS={"default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer"}},
    )
    def test_run_checks_reports_settings_errors(self):
        assert mcp_ids(run_checks(tags=[Tags.compatibility])) == ["django_mcp.E002"]

    @override_settings(
        DJANGO_MCP={"SERVER_NAME": "ok"},
        DEBUG=False,
        ASGI_APPLICATION="tests.asgi.application",
        CHANNEL_LAYERS={"default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer"}},
    )
    def test_run_checks_clean(self):
        assert mcp_ids(run_checks(tags=[Tags.compatibility])) == []


class CheckSettingsTestCase(SimpleTestCase):
    def test_project_test_settings_are_clean(self):
        assert check_settings(None) == []

    @override_settings(DJANGO_MCP={})
    def test_empty_dict_is_clean(self):
        assert check_settings(None) == []

    def test_absent_setting_is_clean(self):
        with override_settings():
            del settings.DJANGO_MCP
            assert check_settings(None) == []

    @override_settings(DJANGO_MCP=["SERVER_NAME", "x"])
    def test_e001_not_a_dict(self):
        messages = check_settings(None)
        assert messages == [
            Error(
                "settings.DJANGO_MCP must be a dict, not list",
                hint="Set DJANGO_MCP = {...}.",
                id="django_mcp.E001",
            )
        ]

    @override_settings(DJANGO_MCP=None)
    def test_e001_none(self):
        messages = check_settings(None)
        assert ids(messages) == ["django_mcp.E001"]
        assert messages[0].msg == "settings.DJANGO_MCP must be a dict, not NoneType"

    @override_settings(DJANGO_MCP={"PAGE_SIZE": 0})
    def test_e002_invalid_value(self):
        assert check_settings(None) == [
            Error(
                "DJANGO_MCP['PAGE_SIZE']: Input should be greater than or equal to 1",
                hint=E002_HINT,
                obj="DJANGO_MCP",
                id="django_mcp.E002",
            )
        ]

    @override_settings(DJANGO_MCP={"SERVR_NAME": "typo"})
    def test_e002_unknown_key(self):
        assert check_settings(None) == [
            Error(
                "DJANGO_MCP['SERVR_NAME']: Extra inputs are not permitted",
                hint=E002_HINT,
                obj="DJANGO_MCP",
                id="django_mcp.E002",
            )
        ]

    @override_settings(DJANGO_MCP={"PAGE_SIZE": 0, "CACHE_SCOPE": "shared", "UNKNOWN": 1, "MAX_REQUEST_BYTES": -1})
    def test_e002_one_error_per_problem(self):
        messages = check_settings(None)
        assert ids(messages) == ["django_mcp.E002"] * 4
        keys = sorted(m.msg.split("]")[0] for m in messages)
        assert keys == [
            "DJANGO_MCP['CACHE_SCOPE'",
            "DJANGO_MCP['MAX_REQUEST_BYTES'",
            "DJANGO_MCP['PAGE_SIZE'",
            "DJANGO_MCP['UNKNOWN'",
        ]
        assert all(m.obj == "DJANGO_MCP" for m in messages)
        assert all(m.is_serious() for m in messages)

    @override_settings(DJANGO_MCP={"ALLOWED_ORIGINS": ["https://ok.example", 5]})
    def test_e002_nested_location(self):
        messages = check_settings(None)
        assert ids(messages) == ["django_mcp.E002"]
        assert messages[0].msg == "DJANGO_MCP['ALLOWED_ORIGINS.1']: Input should be a valid string"

    @override_settings(
        DJANGO_MCP={"PAGE_SIZE": 0, "AUTH": "no.such.module.Auth", "ALLOWED_ORIGINS": ["*"]}, DEBUG=False
    )
    def test_e002_stops_further_checks(self):
        # Invalid settings: AUTH and ALLOWED_ORIGINS cannot be trusted, so only E002 is reported.
        assert ids(check_settings(None)) == ["django_mcp.E002"]

    @override_settings(DJANGO_MCP={"PAGE_SIZE": 0}, DEBUG=False)
    def test_e002_only_the_cache_checks_say_nothing_of_settings_they_cannot_read(self):
        from django_mcp.checks import check_rate_limit_cache, check_session_cache, check_session_cache_size

        assert ids(check_settings(None)) == ["django_mcp.E002"]
        assert check_session_cache(None) == check_rate_limit_cache(None) == check_session_cache_size(None) == []

    @override_settings(ROOT_URLCONF="tests.no_such_urlconf_for_django_mcp")
    def test_a_urlconf_that_cannot_be_imported_builds_no_server(self):
        from django.urls import clear_url_caches

        from django_mcp.checks import built_servers

        clear_url_caches()
        try:
            assert built_servers() == []  # Django's own URL checks say why
        finally:
            clear_url_caches()

    @override_settings(DJANGO_MCP={"AUTH": "no_such_module_for_django_mcp.Auth"})
    def test_e003_module_not_importable(self):
        messages = check_settings(None)
        assert ids(messages) == ["django_mcp.E003"]
        msg = messages[0]
        assert msg.msg.startswith("DJANGO_MCP['AUTH'] = 'no_such_module_for_django_mcp.Auth' cannot be imported: ")
        assert "no_such_module_for_django_mcp" in msg.msg.split("cannot be imported: ", 1)[1]
        assert msg.hint == "Give the dotted path of a django-ninja auth object or class."
        assert msg.is_serious()

    @override_settings(DJANGO_MCP={"AUTH": "django_mcp.conf.NoSuchAuth"})
    def test_e003_attribute_missing(self):
        messages = check_settings(None)
        assert ids(messages) == ["django_mcp.E003"]
        assert "NoSuchAuth" in messages[0].msg

    @override_settings(DJANGO_MCP={"AUTH": "notadottedpath"})
    def test_e003_not_a_dotted_path(self):
        assert ids(check_settings(None)) == ["django_mcp.E003"]

    @override_settings(DJANGO_MCP={"AUTH": "django_mcp.conf.McpSettings"})
    def test_importable_auth_is_clean(self):
        assert check_settings(None) == []

    @override_settings(DJANGO_MCP={"ALLOWED_ORIGINS": ["*"]}, DEBUG=False)
    def test_w003_any_origin_in_production(self):
        assert check_settings(None) == [
            checks.Warning(
                "DJANGO_MCP['ALLOWED_ORIGINS'] allows every Origin.",
                hint="List the origins of the browser clients you trust; '*' disables the DNS-rebinding defence.",
                id="django_mcp.W003",
            )
        ]

    @override_settings(DJANGO_MCP={"ALLOWED_ORIGINS": ["https://app.example", "*"]}, DEBUG=False)
    def test_w003_star_among_others(self):
        assert ids(check_settings(None)) == ["django_mcp.W003"]

    @override_settings(DJANGO_MCP={"ALLOWED_ORIGINS": ["*"]}, DEBUG=True)
    def test_no_w003_under_debug(self):
        assert check_settings(None) == []

    @override_settings(DJANGO_MCP={"ALLOWED_ORIGINS": ["https://app.example", "http://localhost:3000"]}, DEBUG=False)
    def test_no_w003_for_listed_origins(self):
        assert check_settings(None) == []

    @override_settings(DJANGO_MCP={"AUTH": "no_such_module_for_django_mcp.Auth", "ALLOWED_ORIGINS": ["*"]}, DEBUG=False)
    def test_e003_and_w003_together(self):
        assert ids(check_settings(None)) == ["django_mcp.E003", "django_mcp.W003"]


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
class CheckSqliteTestCase(SimpleTestCase):
    def test_project_test_settings(self):
        # The project's SQLite database is configured with IMMEDIATE (or it is PostgreSQL).
        assert check_sqlite(None) == []

    @override_settings(DATABASES=SQLITE_OK)
    def test_immediate_is_clean(self):
        assert check_sqlite(None) == []

    @override_settings(DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}})
    def test_w001_without_options(self):
        assert check_sqlite(None) == [
            checks.Warning(
                "Database 'default' is SQLite without transaction_mode 'IMMEDIATE'.",
                hint=SQLITE_HINT,
                obj="default",
                id="django_mcp.W001",
            )
        ]

    @override_settings(
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": ":memory:",
                "OPTIONS": {"transaction_mode": "DEFERRED"},
            }
        }
    )
    def test_w001_deferred(self):
        assert ids(check_sqlite(None)) == ["django_mcp.W001"]

    @override_settings(
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:", "OPTIONS": {"timeout": 20}}}
    )
    def test_w001_options_without_transaction_mode(self):
        assert ids(check_sqlite(None)) == ["django_mcp.W001"]

    @override_settings(
        DATABASES={
            **SQLITE_OK,
            "replica": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
            "archive": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:", "OPTIONS": {}},
        }
    )
    def test_w001_once_per_offending_alias(self):
        messages = check_sqlite(None)
        assert ids(messages) == ["django_mcp.W001", "django_mcp.W001"]
        assert [m.obj for m in messages] == ["replica", "archive"]
        assert messages[0].msg == "Database 'replica' is SQLite without transaction_mode 'IMMEDIATE'."

    @override_settings(
        DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "x", "OPTIONS": {"pool": True}}}
    )
    def test_postgres_is_clean(self):
        assert check_sqlite(None) == []

    def test_accepts_databases_keyword(self):
        # Django calls database-tagged checks with databases=...
        assert check_sqlite(None, databases=["default"]) == []


class CheckAsgiTestCase(SimpleTestCase):
    def test_project_test_settings_are_clean(self):
        assert check_asgi(None) == []

    @override_settings(ASGI_APPLICATION=None)
    def test_w002_none(self):
        (warning,) = check_asgi(None)
        assert warning.id == "django_mcp.W002"
        assert warning.msg.startswith("ASGI_APPLICATION is not set, so a WSGI server serves the project")
        for refused in ("subscriptions/listen", "GET stream", "worker fleet", "with the result"):
            assert refused in warning.msg
        assert 'Add "daphne" first in INSTALLED_APPS' in warning.hint

    def test_i002_runserver_serves_wsgi_without_daphne(self):
        apps = [app for app in settings.INSTALLED_APPS if app != "daphne"]
        with override_settings(INSTALLED_APPS=apps):
            (info,) = check_asgi(None)
        assert (info.id, info.level) == ("django_mcp.I002", checks.INFO)
        assert "runserver serves WSGI" in info.msg and "subscriptions/listen" in info.msg

    @override_settings(ASGI_APPLICATION="")
    def test_w002_empty(self):
        assert ids(check_asgi(None)) == ["django_mcp.W002"]

    def test_w002_absent(self):
        with override_settings():
            del settings.ASGI_APPLICATION
            assert ids(check_asgi(None)) == ["django_mcp.W002"]

    @override_settings(ASGI_APPLICATION="tests.asgi.application")
    def test_set_is_clean(self):
        assert check_asgi(None) == []

    @override_settings(ASGI_APPLICATION="myproject.asgi.application")
    def test_e005_an_application_that_cannot_be_imported(self):
        # runserver would hang without listening; check says so instead.
        (error,) = check_asgi(None)
        assert error.id == "django_mcp.E005"
        assert error.obj == "ASGI_APPLICATION"
        assert "'myproject.asgi.application' cannot be imported: ModuleNotFoundError" in error.msg


class _BrokenModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes ``djmcp_broken_auth`` a module whose top-level code raises (like a typo in a real auth module)."""

    NAME = "djmcp_broken_auth"

    def find_spec(self, fullname, path, target=None):
        if fullname == self.NAME:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        raise NameError("name 'BearerAuht' is not defined")


@pytest.fixture
def broken_auth_module():
    finder = _BrokenModuleFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield f"{finder.NAME}.Auth"
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop(finder.NAME, None)


def test_e003_auth_module_raising_at_import(broken_auth_module):
    with override_settings(DJANGO_MCP={"AUTH": broken_auth_module}):
        messages = check_settings(None)
    assert [m.id for m in messages] == ["django_mcp.E003"]
    assert "BearerAuht" in messages[0].msg


class ReadsFromReplica:
    """Reads everything from a replica, writes to ``default`` (a common router; the replica need not exist here)."""

    def db_for_read(self, model, **hints):
        return "replica"

    def db_for_write(self, model, **hints):
        return "default"


class TasksToOneDatabase(ReadsFromReplica):
    """The same, except the django_mcp app, read and written on ``default``."""

    def db_for_read(self, model, **hints):
        return "default" if model._meta.app_label == "django_mcp" else "replica"


def _w012() -> list[checks.CheckMessage]:
    return [m for m in run_checks() if m.id == "django_mcp.W012"]


def test_w012_tasks_read_from_another_database_than_they_are_written_to():
    with override_settings(DATABASE_ROUTERS=[f"{__name__}.ReadsFromReplica"]):
        messages = _w012()
    assert messages, "the test project has McpTasks servers"
    namespaces = {
        server.urls_namespace
        for server in servers
        if any(p.identifier == EXTENSION_ID for p in server.extension_plugins)
    }
    assert sorted(m.obj for m in messages) == sorted(namespaces)  # one per server with the tasks extension, only
    message = messages[0]
    assert message.level == checks.WARNING
    assert "reads tasks from 'replica' but writes them to 'default'" in message.msg
    assert "unknown task" in message.msg and "db_for_read" in message.hint


@pytest.mark.parametrize("routers", [[], [f"{__name__}.TasksToOneDatabase"]])
def test_w012_not_raised_when_tasks_are_read_where_they_are_written(routers):
    with override_settings(DATABASE_ROUTERS=routers):
        assert _w012() == []
