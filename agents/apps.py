from django.apps import AppConfig


class AgentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        # Built-ins register through the same public registry a third party would use.
        from agents.jobs import job_service
        from agents.jobs.delegation import register_delegate
        from agents.runtime.builtins import register_builtins
        from agents.signals import connect_config_signals

        register_builtins()
        # Chat and API runs delegate through the job service (the runtime sits below it).
        register_delegate(job_service)
        connect_config_signals()
