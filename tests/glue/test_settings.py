"""Unit tests for django_mcp.conf: the DJANGO_MCP settings model and its cached accessor."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from pydantic import ValidationError

from django_mcp.conf import SETTINGS_NAME, McpSettings, get_settings, validate_settings


class TestMcpSettingsModel:
    def test_defaults(self):
        expected = {
            "SERVER_NAME": "django-mcp",
            "SERVER_VERSION": "0.0.0",
            "SERVER_TITLE": None,
            "INSTRUCTIONS": None,
            "SERVER_INFO_IN_META": True,
            "ALLOWED_ORIGINS": (),
            "MAX_REQUEST_BYTES": 4 * 1024 * 1024,
            "CACHE_TTL_SECONDS": 0,
            "CACHE_SCOPE": "private",
            "PAGE_SIZE": 50,
            "AUTH": None,
            "WWW_AUTHENTICATE": "Bearer",
        }
        dumped = McpSettings().model_dump()
        assert {key: dumped[key] for key in expected} == expected

    def test_settings_name(self):
        assert SETTINGS_NAME == "DJANGO_MCP"

    def test_unknown_key_is_forbidden(self):
        with pytest.raises(ValidationError) as info:
            McpSettings.model_validate({"PAGE_SIZ": 10})
        errors = info.value.errors()
        assert len(errors) == 1
        assert errors[0]["loc"] == ("PAGE_SIZ",)
        assert errors[0]["type"] == "extra_forbidden"

    def test_frozen(self):
        s = McpSettings()
        with pytest.raises(ValidationError):
            s.PAGE_SIZE = 10  # type: ignore[misc]
        assert s.PAGE_SIZE == 50

    def test_allowed_origins_list_becomes_tuple(self):
        s = McpSettings.model_validate({"ALLOWED_ORIGINS": ["https://a.example", "https://b.example"]})
        assert s.ALLOWED_ORIGINS == ("https://a.example", "https://b.example")

    def test_allowed_origins_plain_string_is_rejected(self):
        # A bare string must not be silently split into characters.
        with pytest.raises(ValidationError) as info:
            McpSettings.model_validate({"ALLOWED_ORIGINS": "https://a.example"})
        assert info.value.errors()[0]["loc"] == ("ALLOWED_ORIGINS",)

    def test_valid_values(self):
        cases = [
            ("PAGE_SIZE", 1),
            ("PAGE_SIZE", 1000),
            ("CACHE_TTL_SECONDS", 0),
            ("CACHE_TTL_SECONDS", 3600),
            ("MAX_REQUEST_BYTES", 1),
            ("CACHE_SCOPE", "public"),
            ("CACHE_SCOPE", "private"),
            ("SERVER_TITLE", "My Server"),
            ("INSTRUCTIONS", "Use the add tool."),
            ("SERVER_INFO_IN_META", False),
            ("AUTH", "myapp.auth.BearerAuth"),
            ("WWW_AUTHENTICATE", 'Bearer realm="mcp"'),
        ]
        for key, value in cases:
            assert getattr(McpSettings.model_validate({key: value}), key) == value, key

    @pytest.mark.parametrize(
        ("key", "value", "error_type"),
        [
            ("PAGE_SIZE", 0, "greater_than_equal"),
            ("PAGE_SIZE", 1001, "less_than_equal"),
            ("PAGE_SIZE", "many", "int_parsing"),
            ("CACHE_TTL_SECONDS", -1, "greater_than_equal"),
            ("MAX_REQUEST_BYTES", 0, "greater_than"),
            ("MAX_REQUEST_BYTES", -5, "greater_than"),
            ("CACHE_SCOPE", "shared", "literal_error"),
            ("CACHE_SCOPE", "PUBLIC", "literal_error"),
            ("SERVER_NAME", "", "string_too_short"),
            ("SERVER_VERSION", "", "string_too_short"),
            ("WWW_AUTHENTICATE", "", "string_too_short"),
            ("SERVER_NAME", None, "string_type"),
            ("AUTH", 42, "string_type"),
            ("ALLOWED_ORIGINS", [1], "string_type"),
            ("SERVER_INFO_IN_META", "perhaps", "bool_parsing"),
        ],
    )
    def test_invalid_values(self, key, value, error_type):
        with pytest.raises(ValidationError) as info:
            McpSettings.model_validate({key: value})
        errors = info.value.errors()
        assert errors[0]["loc"][0] == key
        assert errors[0]["type"] == error_type

    def test_every_problem_is_reported(self):
        with pytest.raises(ValidationError) as info:
            McpSettings.model_validate({"PAGE_SIZE": 0, "CACHE_SCOPE": "x", "NOPE": 1})
        assert sorted(e["loc"][0] for e in info.value.errors()) == ["CACHE_SCOPE", "NOPE", "PAGE_SIZE"]


class TestValidateSettings:
    def test_reads_the_project_settings(self):
        s = validate_settings()
        assert s.SERVER_NAME == "django-mcp-tests"
        assert s.SERVER_VERSION == "9.9.9"
        assert s.PAGE_SIZE == 3

    @override_settings(DJANGO_MCP=[("PAGE_SIZE", 3)])
    def test_not_a_dict_is_type_error(self):
        with pytest.raises(TypeError) as info:
            validate_settings()
        assert str(info.value) == "settings.DJANGO_MCP must be a dict, not list"

    def test_absent_setting_means_defaults(self):
        with override_settings():
            del settings.DJANGO_MCP
            assert validate_settings() == McpSettings()


class TestGetSettings:
    def test_values_from_the_test_settings(self):
        s = get_settings()
        assert s.SERVER_NAME == "django-mcp-tests"
        assert s.SERVER_VERSION == "9.9.9"
        assert s.PAGE_SIZE == 3
        assert s.CACHE_SCOPE == "private"

    def test_is_cached(self):
        assert get_settings() is get_settings()

    def test_override_settings_is_seen_and_undone(self):
        before = get_settings()
        with override_settings(DJANGO_MCP={"SERVER_NAME": "overridden", "PAGE_SIZE": 7}):
            inside = get_settings()
            assert inside.SERVER_NAME == "overridden"
            assert inside.PAGE_SIZE == 7
            assert inside.SERVER_VERSION == "0.0.0"  # keys left out fall back to their defaults
            assert get_settings() is inside
        after = get_settings()
        assert after.SERVER_NAME == "django-mcp-tests"
        assert after.PAGE_SIZE == 3
        assert after == before

    @override_settings(DJANGO_MCP={"CACHE_TTL_SECONDS": 1.5, "CACHE_SCOPE": "public"})
    def test_override_settings_as_decorator(self):
        assert get_settings().CACHE_TTL_SECONDS == 1.5
        assert get_settings().CACHE_SCOPE == "public"

    def test_nested_overrides(self):
        with override_settings(DJANGO_MCP={"PAGE_SIZE": 10}):
            assert get_settings().PAGE_SIZE == 10
            with override_settings(DJANGO_MCP={"PAGE_SIZE": 20}):
                assert get_settings().PAGE_SIZE == 20
            assert get_settings().PAGE_SIZE == 10
        assert get_settings().PAGE_SIZE == 3

    def test_other_settings_do_not_clear_the_cache(self):
        cached = get_settings()
        with override_settings(DEBUG=True, ALLOWED_HOSTS=["x"]):
            assert get_settings() is cached

    def test_invalid_value_is_improperly_configured(self):
        with override_settings(DJANGO_MCP={"PAGE_SIZE": 5000}):
            with pytest.raises(ImproperlyConfigured) as info:
                get_settings()
        assert str(info.value) == "Invalid settings.DJANGO_MCP: PAGE_SIZE: Input should be less than or equal to 1000"
        # The broken value is not cached once the override is gone.
        assert get_settings().PAGE_SIZE == 3

    def test_unknown_key_is_improperly_configured(self):
        with override_settings(DJANGO_MCP={"SERVR_NAME": "typo"}):
            with pytest.raises(ImproperlyConfigured) as info:
                get_settings()
        assert str(info.value) == "Invalid settings.DJANGO_MCP: SERVR_NAME: Extra inputs are not permitted"

    def test_not_a_dict_is_improperly_configured(self):
        with override_settings(DJANGO_MCP="PAGE_SIZE=3"):
            with pytest.raises(ImproperlyConfigured) as info:
                get_settings()
        assert str(info.value) == "settings.DJANGO_MCP must be a dict, not str"

    def test_absent_setting_gives_defaults(self):
        # Deleting a setting inside override_settings() sends no setting_changed,
        # so clear the cache by hand on both sides to keep other tests isolated.
        try:
            with override_settings():
                del settings.DJANGO_MCP
                get_settings.cache_clear()
                assert get_settings() == McpSettings()
        finally:
            get_settings.cache_clear()
        assert get_settings().SERVER_NAME == "django-mcp-tests"
