from django.db import migrations, models

import agents.validators


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0021_usage_ledger_quotas"),
    ]

    operations = [
        migrations.AddField(
            model_name="providerendpoint",
            name="document_models",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Model names here that read PDF files themselves (Anthropic document "
                'blocks, OpenAI file parts), as a JSON list; ["*"] for every model. The others, '
                "and every DOCX or text file, get the text extracted from the document.",
                validators=[agents.validators.validate_name_list],
                verbose_name="models reading documents",
            ),
        ),
    ]
