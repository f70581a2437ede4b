"""Scoped API keys: ``scopes`` and ``profiles``.

Keys made before scopes existed could do everything; they keep all three scopes. New keys get
``read run`` unless asked otherwise.
"""

from django.db import migrations, models

import agents.models.keys


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0019_mcp_credentials_stdio"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="scopes",
            # Every existing row gets all three; the next operation sets the default of new ones.
            field=models.CharField(default="read run keys", max_length=32, verbose_name="scopes"),
        ),
        migrations.AlterField(
            model_name="apikey",
            name="scopes",
            field=models.CharField(
                default="read run",
                help_text="Space-separated, among: read (every GET), run (start, cancel, retry, "
                "decide; /v1), keys (create and revoke keys).",
                max_length=32,
                validators=[agents.models.keys.validate_scopes],
                verbose_name="scopes",
            ),
        ),
        migrations.AddField(
            model_name="apikey",
            name="profiles",
            field=models.TextField(
                blank=True,
                default="",
                help_text="Space-separated profile slugs the key may use. Empty: every profile.",
                verbose_name="profiles",
            ),
        ),
    ]
