from django.db import migrations, models


class Migration(migrations.Migration):
    """A conversation's owner may pin it to the top of their list or archive it out of it."""

    dependencies = [
        ("conversations", "0016_origin_mcp"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="pinned",
            field=models.BooleanField(
                default=False,
                help_text="Kept at the top of the owner's conversation list.",
                verbose_name="pinned",
            ),
        ),
        migrations.AddField(
            model_name="conversation",
            name="archived",
            field=models.BooleanField(
                default=False,
                help_text="Out of the owner's conversation list, still searchable; nothing is "
                "deleted.",
                verbose_name="archived",
            ),
        ),
    ]
