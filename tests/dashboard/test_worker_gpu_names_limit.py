"""A host's GPU names are held to one limit whoever writes them (docs/protocol.md 2.2: at most 64 names, each at
most 100 characters): a worker's hello, the workers page and `worker_token --gpus`. The page took any number of
names of any length within 500 characters in all (250 one-letter names; refused 8 names of 70), and the command
took anything, names a hello is refused."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from runs.models import WorkerHost
from runs.services.workers import GPU_NAME_MAX_CHARS, GPUS_MAX_COUNT
from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db

AT_LIMIT = [f"{i:02d}" + "g" * (GPU_NAME_MAX_CHARS - 2) for i in range(GPUS_MAX_COUNT)]


def test_the_limits_are_the_documented_ones():
    assert (GPUS_MAX_COUNT, GPU_NAME_MAX_CHARS) == (64, 100)


@pytest.fixture
def operator(client):
    client.force_login(make_user("olga", "operator"))
    return client


def test_the_workers_page_takes_64_names_of_100_characters(operator):
    response = operator.post(reverse("workers"), {"name": "gpu-a", "gpus": ", ".join(AT_LIMIT)})
    assert response.status_code == 200
    assert WorkerHost.objects.get(name="gpu-a").gpus == AT_LIMIT


@pytest.mark.parametrize(
    "gpus",
    [AT_LIMIT + ["h"], ["x" * (GPU_NAME_MAX_CHARS + 1)], ["a"] * (GPUS_MAX_COUNT + 1)],
    ids=["65 names", "a name of 101", "65 one-letter names"],
)
def test_the_workers_page_refuses_one_past_either_limit_naming_it(operator, gpus):
    response = operator.post(reverse("workers"), {"name": "gpu-a", "gpus": ",".join(gpus)})
    assert response.status_code == 400 and not WorkerHost.objects.exists()
    assert "at most 64 GPU names, each at most 100 characters" in response.content.decode()


def test_worker_token_takes_the_limit_and_refuses_one_past_it_with_a_command_error():
    call_command("worker_token", "gpu-a", "--gpus", ",".join(AT_LIMIT), stdout=io.StringIO())
    assert WorkerHost.objects.get(name="gpu-a").gpus == AT_LIMIT
    with pytest.raises(CommandError, match="at most 64 GPU names, each at most 100 characters"):
        call_command("worker_token", "gpu-b", "--gpus", "x" * (GPU_NAME_MAX_CHARS + 1))
    assert not WorkerHost.objects.filter(name="gpu-b").exists()


def test_worker_token_holds_a_hosts_name_to_its_80_characters():
    """The workers page's form holds a host's name to WorkerHost.name's 80 characters; `worker_token` took any
    length (a DataError on PostgreSQL)."""
    assert WorkerHost._meta.get_field("name").max_length == 80
    call_command("worker_token", "h" * 80, stdout=io.StringIO())
    assert WorkerHost.objects.filter(name="h" * 80).exists()
    with pytest.raises(CommandError, match="a host's name has 1 to 80 characters, not 81"):
        call_command("worker_token", "h" * 81, stdout=io.StringIO())
    assert WorkerHost.objects.count() == 1


def test_worker_token_and_the_workers_page_read_a_list_of_names_alike(operator):
    """The page stripped the spaces around each name; `worker_token --gpus "H100, H100"` kept " H100"."""
    written = " H100,H200 , ,  H100 "
    call_command("worker_token", "by-command", "--gpus", written, stdout=io.StringIO())
    response = operator.post(reverse("workers"), {"name": "by-page", "gpus": written})
    assert response.status_code == 200
    assert WorkerHost.objects.get(name="by-command").gpus == WorkerHost.objects.get(name="by-page").gpus
    assert WorkerHost.objects.get(name="by-command").gpus == ["H100", "H200", "H100"]
