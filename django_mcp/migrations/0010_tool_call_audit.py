import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_mcp", "0009_personal_token"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ToolCall",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                (
                    "caller",
                    models.CharField(
                        help_text="Who called: the user, another principal's kind, or an anonymous client's address.",
                        max_length=200,
                    ),
                ),
                ("server", models.CharField(help_text="The endpoint (its URL namespace).", max_length=100)),
                ("tool", models.CharField(db_index=True, max_length=128)),
                (
                    "outcome",
                    models.CharField(
                        help_text="result, error (an isError result), task, input_required, refused or cancelled.",
                        max_length=20,
                    ),
                ),
                (
                    "duration_ms",
                    models.FloatField(help_text="Until the answer was ready (a task's body runs on after it)."),
                ),
                (
                    "arguments",
                    models.JSONField(blank=True, help_text="As the tool's audit rule keeps them.", null=True),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        help_text="The Django user who called, when the caller was one.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "tool call",
                "ordering": ("-created_at",),
            },
        ),
    ]
