"""``manage.py mcp_token create|list|revoke``: personal tokens for scripts, CI and clients without OAuth."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_mcp.models import PersonalToken


class Command(BaseCommand):
    help = "Make, list and revoke personal MCP tokens (the token is printed once, at creation)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Make a token for a user and print it once.")
        create.add_argument("--user", required=True, help="The username the token acts for.")
        create.add_argument("--name", required=True, help="What the token is for.")
        create.add_argument("--scope", default="mcp", help="Space-separated scopes (default: mcp).")
        create.add_argument("--days", type=int, default=90, help="Days until it expires (default: 90).")
        listing = actions.add_parser("list", help="List tokens (never the tokens themselves).")
        listing.add_argument("--user", help="Only this user's tokens.")
        revoke = actions.add_parser("revoke", help="Revoke a token by its prefix (as `list` shows it).")
        revoke.add_argument("prefix")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"_{options['action']}")(options)

    def _create(self, options: dict[str, Any]) -> None:
        user_model = get_user_model()
        try:
            user = user_model._default_manager.get_by_natural_key(options["user"])
        except user_model.DoesNotExist:
            raise CommandError(f"No user {options['user']!r}") from None
        if not 1 <= options["days"] <= 3650:
            raise CommandError("--days must be between 1 and 3650")
        _, token = PersonalToken.issue(
            user, options["name"], scope=options["scope"], lifetime=timedelta(days=options["days"])
        )
        self.stdout.write(token)
        self.stderr.write("Copy it now: it is not stored and cannot be shown again.")

    def _list(self, options: dict[str, Any]) -> None:
        rows = PersonalToken.objects.select_related("user")
        if options["user"]:
            rows = rows.filter(**{f"user__{get_user_model().USERNAME_FIELD}": options["user"]})
        for row in rows:
            state = "revoked" if row.revoked_at else "usable" if row.is_usable else "expired"
            expires = f"{row.expires_at:%Y-%m-%d}"
            self.stdout.write(
                f"{row.prefix}  {row.user}  {row.name!r}  scope={row.scope!r}  expires={expires}  {state}"
            )

    def _revoke(self, options: dict[str, Any]) -> None:
        rows = list(PersonalToken.objects.filter(prefix=options["prefix"], revoked_at=None))
        if len(rows) != 1:
            raise CommandError(f"{len(rows)} usable tokens have the prefix {options['prefix']!r}: give one naming one")
        rows[0].revoke()
        self.stdout.write(f"Revoked {rows[0]}")
