"""How long each kind of record is kept: the setting, the profiles' overrides, the cutoffs.

``ORKESTREL["RETENTION_DAYS"]`` maps a kind to days (missing, ``None`` or 0: kept for ever). A
profile's ``retain_<kind>_days`` overrides it for the records of its conversations and jobs
(0 keeps them for ever); records of no profile (it was deleted) follow the setting. A
``Retention`` is read once per purge, at the purge's ``now``: the cutoffs are pure arithmetic.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q

from ..models import RETENTION_KINDS, AgentProfile, RetentionKind
from ..models.retention import profile_field

__all__ = ["Retention", "configured_days"]


def configured_days() -> dict[RetentionKind, int | None]:
    """The setting's days by kind (``None``: kept for ever)."""
    given: Mapping[str, int | None] = getattr(settings, "ORKESTREL", {}).get("RETENTION_DAYS", {})
    return {kind: (given.get(kind) or None) for kind in RETENTION_KINDS}


@dataclass(frozen=True, slots=True)
class Retention:
    """The days each kind is kept: ``default`` (the setting), ``overrides`` (by profile id)."""

    default: Mapping[RetentionKind, int | None]
    overrides: Mapping[RetentionKind, Mapping[int, int]]

    @classmethod
    def read(cls) -> Retention:
        """The setting and every profile's overrides, as they are now."""
        overrides: dict[RetentionKind, dict[int, int]] = {}
        for kind in RETENTION_KINDS:
            field = profile_field(kind)
            rows = AgentProfile.objects.filter(**{f"{field}__isnull": False}).values_list(
                "pk", field
            )
            overrides[kind] = {pk: int(days) for pk, days in rows}
        return cls(default=configured_days(), overrides=overrides)

    def keeps_everything(self) -> bool:
        """Whether nothing is ever past its time (no purge has anything to do)."""
        if any(self.default.values()):
            return False
        return not any(
            days for by_profile in self.overrides.values() for days in by_profile.values()
        )

    def past(self, kind: RetentionKind, *, profile: str, moment: str, now: datetime) -> Q | None:
        """The records of ``kind`` past their time: ``moment`` (a field path to a datetime)
        before ``now`` less their days, by the profile at ``profile`` (a field path to its id).
        ``None`` when none can be (everything of this kind is kept for ever)."""
        overrides = self.overrides.get(kind, {})
        by_days: dict[int, list[int]] = defaultdict(list)
        for profile_id, days in overrides.items():
            if days:  # 0: kept for ever
                by_days[days].append(profile_id)
        found: Q | None = None
        for days, profile_ids in sorted(by_days.items()):
            older = Q(
                **{f"{profile}__in": profile_ids, f"{moment}__lt": now - timedelta(days=days)}
            )
            found = older if found is None else found | older
        default = self.default.get(kind)
        if default:
            rest = Q(**{f"{moment}__lt": now - timedelta(days=default)})
            if overrides:
                rest &= ~Q(**{f"{profile}__in": list(overrides)})
            found = rest if found is None else found | rest
        return found
