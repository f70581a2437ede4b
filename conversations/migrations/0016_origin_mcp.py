from django.db import migrations, models


class Migration(migrations.Migration):
    """Conversations started by an MCP client at ``/mcp`` (``origin`` ``mcp``)."""

    dependencies = [
        ("conversations", "0015_branches"),
    ]

    operations = [
        migrations.AlterField(
            model_name="conversation",
            name="origin",
            field=models.CharField(
                choices=[
                    ("chat", "chat"),
                    ("api", "REST API"),
                    ("openai", "OpenAI-compatible API"),
                    ("mcp", "MCP server"),
                ],
                default="chat",
                help_text="The front door it was started through.",
                max_length=16,
                verbose_name="origin",
            ),
        ),
    ]
