"""Fixtures for the workspaces app: users and a Django store owned by one."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from workspaces.stores import DjangoWorkspaceStore


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("ada")


@pytest.fixture
def other_user(db):
    return get_user_model().objects.create_user("bob")


@pytest.fixture
def django_store(user) -> DjangoWorkspaceStore:
    return DjangoWorkspaceStore(owner=user)
