import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_mcp", "0008_task_counted_as"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="PersonalToken",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(help_text="What it is for, e.g. “nightly report job”.", max_length=100)),
                ("digest", models.CharField(editable=False, max_length=64, unique=True)),
                (
                    "prefix",
                    models.CharField(
                        editable=False, help_text="The token's first characters, to tell tokens apart.", max_length=16
                    ),
                ),
                (
                    "scope",
                    models.CharField(
                        default="mcp", help_text="Space-separated OAuth scopes the token carries.", max_length=500
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("expires_at", models.DateTimeField()),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        help_text="Whom the token acts for: its tool calls and tasks are this user's.",
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="mcp_personal_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ("-created_at",),
            },
        ),
    ]
