import pytest

from orkestrel import __version__


@pytest.mark.django_db
def test_healthz_reports_status_version_and_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": __version__, "database": True}


def test_healthz_refuses_post(client):
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_admin_login_page_renders(client):
    response = client.get("/admin/login/")
    assert response.status_code == 200
    assert b"username" in response.content


@pytest.mark.django_db
def test_bootstrap_creates_one_operator_and_prints_password_once(capsys):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("bootstrap")
    first = capsys.readouterr().out
    call_command("bootstrap")
    second = capsys.readouterr().out
    assert "password" in first and "password" not in second
    assert get_user_model().objects.filter(is_superuser=True).count() == 1
