from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_mcp", "0010_tool_call_audit"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="traceparent",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="OpenTelemetry: the W3C traceparent of the tools/call that created the task, which its "
                "run's span links to (on a fleet worker too). Empty without tracing.",
                max_length=64,
            ),
        ),
    ]
