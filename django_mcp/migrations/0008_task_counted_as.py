from django.apps.registry import Apps
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.models import F


def count_existing_tasks_as_their_owner(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    # The per-owner counters of the tasks already there were kept by owner: the same key.
    task = apps.get_model("django_mcp", "Task")
    task.objects.using(schema_editor.connection.alias).filter(counted_as="").update(counted_as=F("owner"))


class Migration(migrations.Migration):
    dependencies = [
        ("django_mcp", "0007_task_help_texts"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="counted_as",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="Whom the per-caller cap counts the task against: the owner digest, or for an anonymous "
                "caller a digest of its client address (for the cap only: anonymous callers still share their tasks).",
                max_length=255,
            ),
        ),
        migrations.RunPython(count_existing_tasks_as_their_owner, migrations.RunPython.noop, elidable=True),
    ]
