"""The operators' admin for schedules (with their runs' history) and the purges' reports.

**Run now** is a request in the database, as a job's retry is: it sets ``run_requested`` and
the scheduler's next tick (within ``ORKESTREL_SCHEDULE_TICK_SECONDS``) starts the job, where
jobs run. A schedule's webhook secret is shown once, when it is created or rotated, in the
page's message; it is derived, never stored.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from .admin_base import OperatorAdmin
from .models import PurgeReport, Schedule, ScheduleRun, new_salt

__all__ = ["PurgeReportAdmin", "ScheduleAdmin"]


class ScheduleRunInline(admin.TabularInline):
    """The schedule's starts, newest first: what started each and the job it made."""

    model = ScheduleRun
    extra = 0
    can_delete = False
    max_num = 0
    ordering = ["-created", "-id"]
    fields = ("created", "trigger", "due", "job_link", "job_status", "error")
    readonly_fields = ("created", "trigger", "due", "job_link", "job_status", "error")
    verbose_name_plural = "runs (the jobs it started)"

    @admin.display(description="job")
    def job_link(self, run: ScheduleRun) -> str:
        if run.job_id is None:
            return "—"
        url = reverse("admin:agents_agentjob_change", args=[run.job_id])
        return format_html('<a href="{}">{}</a>', url, run.job_id)

    @admin.display(description="status")
    def job_status(self, run: ScheduleRun) -> str:
        return run.job.status if run.job is not None else "—"

    def has_add_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        return False


@admin.register(Schedule)
class ScheduleAdmin(OperatorAdmin):
    """A job on a cron in a time zone, its webhook, **Run now**, and its history."""

    list_display = [
        "name",
        "user",
        "profile",
        "cron",
        "timezone",
        "enabled",
        "next_run",
        "last_run",
    ]
    list_filter = ["enabled", "profile"]
    list_select_related = ["user", "profile"]
    search_fields = ["name", "user__username", "profile__slug", "prompt"]
    actions = ["run_now", "rotate_secret"]
    readonly_fields = ["id", "next_run", "last_run", "run_requested", "webhook", "created"]
    fieldsets = [
        (None, {"fields": ["name", "user", "profile", "prompt"]}),
        ("When", {"fields": ["cron", "timezone", "enabled", "next_run", "last_run"]}),
        ("On demand", {"fields": ["run_requested", "webhook"]}),
        ("History", {"fields": ["id", "created"]}),
    ]
    inlines = [ScheduleRunInline]

    @admin.display(description="webhook URL")
    def webhook(self, schedule: Schedule) -> str:
        if schedule.pk is None or schedule._state.adding:
            return "(once saved)"
        return reverse("schedule-hook", args=[schedule.pk])

    def save_model(
        self, request: HttpRequest, obj: Schedule, form: ModelForm, change: bool
    ) -> None:
        obj.plan(timezone.now())
        super().save_model(request, obj, form, change)

    def response_add(
        self, request: HttpRequest, obj: Schedule, post_url_continue: str | None = None
    ) -> HttpResponse:
        self._show_secret(request, obj)
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description="Run the selected schedules now")
    def run_now(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        count = Schedule.objects.filter(pk__in=queryset.values("pk")).update(
            run_requested=timezone.now()
        )
        self.message_user(
            request,
            f"Starting {count} schedule(s) at the scheduler's next tick; their jobs appear in "
            "each schedule's runs.",
            messages.SUCCESS,
        )

    @admin.action(description="Rotate the webhook secret (the old one stops working)")
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one schedule.", messages.ERROR)
            return
        schedule = queryset.get()
        schedule.secret_salt = new_salt()
        schedule.save(update_fields=["secret_salt", "updated"])
        self._show_secret(request, schedule)

    def _show_secret(self, request: HttpRequest, schedule: Schedule) -> None:
        self.message_user(
            request,
            format_html(
                "The webhook secret of {}, shown this once: <code>{}</code>",
                schedule.name,
                schedule.webhook_secret(),
            ),
            messages.WARNING,
        )


@admin.register(PurgeReport)
class PurgeReportAdmin(OperatorAdmin):
    """What each purge deleted, by kind (``manage.py purge``, and the daily one)."""

    list_display = ["started", "trigger", "dry_run", "total", "finished"]
    list_filter = ["trigger", "dry_run"]
    fields = ("started", "trigger", "occurrence", "dry_run", "counts", "finished")
    readonly_fields = ("started", "trigger", "occurrence", "dry_run", "counts", "finished")

    @admin.display(description="rows")
    def total(self, report: PurgeReport) -> int:
        return sum(int(count) for count in (report.counts or {}).values())

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
