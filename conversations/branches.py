"""Branches: the alternatives a regenerated answer or an edited user message leaves behind.

A branch point is the message its alternatives follow (``""``: the conversation's start); each
alternative is a ``Branch`` row numbered from 1, exactly one of them chosen. A message's
``branch`` is the innermost alternative it belongs to, and it is ``hidden`` when that
alternative, or one around it, is not chosen. Choosing flips flags only: messages keep their
ids and positions, so flipping back finds every answer as it was, and ``Message.objects`` (what
the kit, the chat, search, export and forks read) holds the chosen branch alone.

The kit's store writes new messages without a branch: one that comes after a branch point
belongs to the chosen alternative of the last point before it (by position), and ``_adopt``
records that before anything branches again.

Branching is offered in the live tail only: once compaction folds a turn into a section, its
summary stands for the chosen branch, and its other alternatives stay stored, no longer offered
(their point is not in the tail any more).
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from orkestrel.protocol import BranchPayload
from orkestrel.refusals import Refusal

from .models import Branch, Conversation, Message, Run, Section

__all__ = [
    "BranchBusy",
    "NoSuchBranch",
    "NotBranchable",
    "Redo",
    "branch_points",
    "conversation_branches",
    "retry_point",
    "select_branch",
    "start_alternative",
]

# The position before every message: where a branch point at the start is.
_START = -1


class BranchBusy(RuntimeError, Refusal):
    """A run is going on the conversation: choose another alternative once it settled."""

    code = "busy"
    status_code = 409


class NoSuchBranch(LookupError, Refusal):
    """No such message on the chosen branch of the live tail, or no such alternative."""

    code = "not_found"
    status_code = 404


class NotBranchable(ValueError, Refusal):
    """The message cannot be redone: not a user message (edit), or no turn of the live tail."""

    code = "not_branchable"
    status_code = 409


@dataclass(frozen=True, slots=True)
class Redo:
    """How a run makes a new alternative: ``regenerate`` answers the turn of ``message`` again
    (a user message, or any message of its answer); ``edit`` replaces the user message
    ``message`` with the run's own. ``failed`` is the failed run a retry answers again: the
    alternative it leaves keeps it (the chat shows its error there)."""

    kind: Literal["regenerate", "edit"]
    message: str
    failed: int | None = None


@dataclass(frozen=True, slots=True)
class _Point:
    id: str  # the message the alternatives follow ("": the start)
    position: int
    region: int | None  # the alternative that message is in (None: before every point)


def _key(conversation_id: str | uuid.UUID) -> uuid.UUID:
    return conversation_id if isinstance(conversation_id, uuid.UUID) else uuid.UUID(conversation_id)


def _lock(key: uuid.UUID) -> None:
    """Lock the conversation row (PostgreSQL): branch changes and saves take turns."""
    list(Conversation.objects.select_for_update().filter(pk=key).values_list("pk"))


def _hold_slot(key: uuid.UUID) -> int:
    """Take the conversation's run slot for this transaction (the one-active-run constraint),
    so no run starts, in any process, while the branch changes: a placeholder run the caller
    deletes before it commits, never seen by anyone else. Its id; ``BranchBusy`` when a run
    holds the slot."""
    try:
        with transaction.atomic():
            return Run.objects.create(conversation_id=key, status=Run.Status.QUEUED).pk
    except IntegrityError:
        raise BranchBusy("a reply is still running in this conversation") from None


# -- which alternatives are shown --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tree:
    """Every alternative of a conversation: its point, whether it is chosen and shown."""

    points: dict[int, str]
    chosen: set[int]
    parents: dict[int, int | None]  # the alternative its point's message is in
    anchors: dict[str, int]  # a point's message position
    shown: set[int]


def _tree(key: uuid.UUID) -> _Tree:
    rows = list(Branch.objects.filter(conversation_id=key).values_list("pk", "point", "active"))
    points = {pk: point for pk, point, _ in rows}
    named = {point for point in points.values() if point}
    found = Message.every.filter(conversation_id=key, message_id__in=named).values_list(
        "message_id", "branch_id", "position"
    )
    where = {message_id: (branch, position) for message_id, branch, position in found}
    parents = {pk: where.get(point, (None, _START))[0] for pk, point in points.items()}
    anchors = {point: where.get(point, (None, _START))[1] for point in set(points.values())}
    chosen = {pk for pk, _, active in rows if active}
    shown: set[int] = set()
    for pk in points:
        # Up the points an alternative sits in: shown when every one of them is chosen. A
        # parent's point comes before its child's, so the walk ends.
        node: int | None = pk
        visible = True
        for _ in range(len(points) + 1):
            if node is None:
                break
            if node not in chosen:
                visible = False
                break
            node = parents.get(node)
        if visible:
            shown.add(pk)
    return _Tree(points, chosen, parents, anchors, shown)


def _adopt(key: uuid.UUID, tree: _Tree) -> None:
    """Give the messages written since the last branch change their alternative: the shown
    alternative of the last point before each (the chosen path's points, in order)."""
    path = sorted((tree.anchors[tree.points[pk]], pk) for pk in tree.shown)
    for number, (position, pk) in enumerate(path):
        after = Q(position__gt=position)
        if number + 1 < len(path):
            after &= Q(position__lte=path[number + 1][0])
        Message.every.filter(after, conversation_id=key, hidden=False, branch__isnull=True).update(
            branch_id=pk
        )


def _refresh(key: uuid.UUID) -> None:
    """Hide every message of an alternative not shown, show the others (two ``UPDATE``s)."""
    shown = _tree(key).shown
    visible = Q(branch__isnull=True) | Q(branch_id__in=shown)
    rows = Message.every.filter(conversation_id=key)
    rows.filter(hidden=False).exclude(visible).update(hidden=True)
    rows.filter(visible, hidden=True).update(hidden=False)
    # The provider's last prompt count was of another history: the meter estimates again.
    Conversation.objects.filter(pk=key).update(context_tokens=None, updated=timezone.now())


# -- making and choosing alternatives --------------------------------------------------------


def _point(key: uuid.UUID, redo: Redo) -> tuple[_Point, tuple[str, ...]]:
    """Where ``redo`` branches, and the images of the message it edits."""
    tail = list(
        Message.objects.filter(conversation_id=key, section__isnull=True)
        .order_by("position")
        .values_list("message_id", "role", "position", "branch_id", "images")
    )
    index = next((i for i, row in enumerate(tail) if row[0] == redo.message), None)
    if index is None:
        raise NoSuchBranch(f"no message {redo.message!r} in the live part of this conversation")
    if redo.kind == "regenerate":
        # The turn's user message: the answer's alternatives follow it.
        while index >= 0 and tail[index][1] != Message.Role.USER:
            index -= 1
        if index < 0:
            raise NotBranchable("no user message of this turn is in the live conversation")
        message_id, _, position, region, _ = tail[index]
        return _Point(message_id, position, region), ()
    message_id, role, _, _, images = tail[index]
    if role != Message.Role.USER:
        raise NotBranchable("only a user message can be edited")
    if index > 0:
        before, _, position, region, _ = tail[index - 1]
        return _Point(before, position, region), tuple(images or ())
    if Section.objects.filter(conversation_id=key).exists():
        raise NotBranchable("the message before it is folded into a summary")
    return _Point("", _START, None), tuple(images or ())


def _open(key: uuid.UUID, point: _Point, failed: int | None) -> None:
    """Make ``point`` a branch point, if it is not one yet: what follows it (in its
    alternative) becomes alternative 1."""
    if Branch.objects.filter(conversation_id=key, point=point.id).exists():
        return
    first = Branch.objects.create(
        conversation_id=key, point=point.id, index=1, active=True, run_id=failed
    )
    region = Q(branch__isnull=True) if point.region is None else Q(branch_id=point.region)
    Message.every.filter(
        region, conversation_id=key, hidden=False, position__gt=point.position
    ).update(branch=first)


def start_alternative(conversation_id: str | uuid.UUID, redo: Redo, run_id: int) -> tuple[str, ...]:
    """Make the new, chosen alternative ``redo`` asks for, answered by the run ``run_id``;
    call in the transaction that opened that run. The edited message's images, for ``edit``.

    Raises:
        NoSuchBranch: ``redo.message`` is not on the chosen branch of the live tail.
        NotBranchable: it cannot be redone (see ``NotBranchable``).
    """
    key = _key(conversation_id)
    with transaction.atomic():
        _lock(key)
        _adopt(key, _tree(key))
        point, images = _point(key, redo)
        _open(key, point, redo.failed)
        top = Branch.objects.filter(conversation_id=key, point=point.id).aggregate(n=Max("index"))
        Branch.objects.filter(conversation_id=key, point=point.id, active=True).update(active=False)
        Branch.objects.create(
            conversation_id=key,
            point=point.id,
            index=(top["n"] or 0) + 1,
            active=True,
            run_id=run_id,
        )
        _refresh(key)
    return images


def select_branch(conversation_id: str | uuid.UUID, point: str, index: int, *, owner: int) -> None:
    """Choose alternative ``index`` at ``point`` in a conversation of ``owner`` (durably: the
    next run continues from it).

    Raises:
        BranchBusy: a run is going on the conversation.
        NoSuchBranch: not the owner's conversation, no such point on the chosen branch of the
            live tail, or no such alternative.
    """
    key = _key(conversation_id)
    with transaction.atomic():
        _lock(key)
        if not Conversation.objects.filter(pk=key, owner_id=owner).exists():
            raise NoSuchBranch("no such conversation")
        slot = _hold_slot(key)
        if point:
            live = Message.objects.filter(conversation_id=key, section__isnull=True)
            if not live.filter(message_id=point).exists():
                raise NoSuchBranch(f"no branch point {point!r} in the live conversation")
        elif Section.objects.filter(conversation_id=key).exists():
            raise NoSuchBranch("the start of this conversation is folded into a summary")
        target = Branch.objects.filter(conversation_id=key, point=point, index=index).first()
        if target is None:
            raise NoSuchBranch(f"no alternative {index} at that point")
        if not target.active:
            _adopt(key, _tree(key))
            Branch.objects.filter(conversation_id=key, point=point, active=True).update(
                active=False
            )
            Branch.objects.filter(pk=target.pk).update(active=True)
            _refresh(key)
        Run.objects.filter(pk=slot).delete()


def retry_point(conversation_id: str | uuid.UUID) -> str | None:
    """The user message a retry of the latest turn answers again: the last one of the live
    tail (``None``: none is live)."""
    return (
        Message.objects.filter(
            conversation_id=_key(conversation_id), section__isnull=True, role=Message.Role.USER
        )
        .order_by("-position")
        .values_list("message_id", flat=True)
        .first()
    )


# -- what the chat shows ----------------------------------------------------------------------


def branch_points(
    conversation_id: str | uuid.UUID, tail: Sequence[Message], *, folded: bool
) -> list[BranchPayload]:
    """The branch points of the live ``tail`` (its rows, in order), in order: the chosen
    alternative of each, how many there are, and the message the chat shows them on (the
    chosen alternative's first; ``None`` when it holds none, as a failed attempt may).
    ``folded``: the conversation has sections (a point at its start is folded then)."""
    rows = list(
        Branch.objects.filter(conversation_id=_key(conversation_id))
        .order_by("point", "index")
        .values_list("point", "index", "active", "run__status", "run__error")
    )
    if not rows:
        return []
    positions = [row.position for row in tail]
    where = {row.message_id: row.position for row in tail}
    if not folded:
        where[""] = _START
    found: dict[str, BranchPayload] = {}
    for point, index, active, status, error in rows:
        if point not in where:
            continue
        entry = found.setdefault(
            point, {"point": point, "message": None, "index": 0, "count": 0, "error": ""}
        )
        entry["count"] += 1
        if active:
            entry["index"] = index
            entry["error"] = (error or "the model did not answer") if status == "error" else ""
    for point, entry in found.items():
        after = bisect.bisect_right(positions, where[point])
        entry["message"] = tail[after].message_id if after < len(tail) else None
    return sorted(
        (entry for entry in found.values() if entry["count"] > 1),
        key=lambda entry: where[entry["point"]],
    )


def conversation_branches(conversation_id: str | uuid.UUID) -> list[BranchPayload]:
    """``branch_points`` of a conversation, read from the database."""
    key = _key(conversation_id)
    tail: Iterable[Message] = (
        Message.objects.filter(conversation_id=key, section__isnull=True)
        .order_by("position")
        .only("message_id", "position")
    )
    folded = Section.objects.filter(conversation_id=key).exists()
    return branch_points(key, list(tail), folded=folded)
