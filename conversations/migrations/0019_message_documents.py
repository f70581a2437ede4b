from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0018_run_model"),
    ]

    operations = [
        migrations.AddField(
            model_name="attachment",
            name="name",
            field=models.CharField(blank=True, max_length=255, verbose_name="file name"),
        ),
        migrations.AddField(
            model_name="attachment",
            name="pages",
            field=models.PositiveIntegerField(blank=True, null=True, verbose_name="pages"),
        ),
        migrations.AddField(
            model_name="attachment",
            name="texts",
            field=models.JSONField(
                blank=True, help_text="A document's, by page.", null=True, verbose_name="text"
            ),
        ),
        migrations.AlterField(
            model_name="attachment",
            name="data",
            field=models.TextField(help_text="The image or document, base64.", verbose_name="data"),
        ),
        migrations.AlterField(
            model_name="attachment",
            name="mime",
            field=models.CharField(max_length=100, verbose_name="MIME type"),
        ),
        migrations.AddField(
            model_name="message",
            name="document_text",
            field=models.TextField(blank=True, editable=False, verbose_name="document text"),
        ),
        migrations.AddField(
            model_name="message",
            name="documents",
            field=models.JSONField(
                blank=True,
                help_text="Documents the user attached: "
                "{name, mime, data (base64), size, texts, pages}.",
                null=True,
                verbose_name="documents",
            ),
        ),
        migrations.AddField(
            model_name="pendingmessage",
            name="documents",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="As a message's documents.",
                verbose_name="documents",
            ),
        ),
    ]
