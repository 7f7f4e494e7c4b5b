"""Every page answers only the methods it serves (issue 34, item 12): a read-only page answers PUT, DELETE,
POST, PATCH and TRACE with 405 and the methods it allows, and a page with a form allows POST besides. The sweep
walks every URL pattern of the site (the admin's are Django's own), so a new page must say what it serves here."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

READ = {"GET", "HEAD"}
FORM = READ | {"POST"}
ACTION = {"POST"}

# url name -> the methods it answers. Read-only unless listed otherwise.
SERVES = {
    "run_start": FORM,
    "study_start": FORM,
    "suite_study_start": FORM,
    "run_fork": FORM,
    "trace_import": FORM,
    "workers": FORM,
    "worker_revoke": FORM,
    "login": FORM,
    "demo_start": ACTION,
    "run_control": ACTION,
    "run_message": ACTION,
    "review_decide": ACTION,
    "bank_add": ACTION,
    "kernel_verify": ACTION,
    "logout": {"POST", "OPTIONS"},
}
SWEPT = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "TRACE"]
SAMPLE_ARGS = {"int": "1", "slug": "matmul_cpu", "str": "x", "path": "x"}


def site_patterns(resolver=None, prefix=""):
    """(name, path) of every URL pattern of the site but the admin's, with a sample value for each argument."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if entry.app_name != "admin":
                yield from site_patterns(entry, route)
        elif isinstance(entry, URLPattern):
            path = route
            for name, converter in entry.pattern.converters.items():
                kind = type(converter).__name__.removesuffix("Converter").lower()
                path = path.replace(f"<{kind}:{name}>", SAMPLE_ARGS[kind])
            yield entry.name, "/" + path


PATTERNS = sorted(site_patterns(), key=lambda pattern: pattern[1])


def test_the_sweep_names_every_url_pattern_and_each_has_a_name():
    names = [name for name, _ in PATTERNS]
    assert all(names) and len(names) == len(set(names)), names
    assert set(SERVES) <= set(names)


@pytest.mark.parametrize(("name", "path"), PATTERNS, ids=[path for _, path in PATTERNS])
def test_each_page_answers_405_with_its_methods_to_any_other_method(client, name, path):
    # A superuser holds every role: each page gets as far as its method check.
    client.force_login(get_user_model().objects.create(username="root", is_superuser=True, is_staff=True))
    serves = SERVES.get(name, READ)
    for method in SWEPT:
        if method in serves:
            continue
        response = client.generic(method, path)
        assert response.status_code == 405, f"{method} {path}: {response.status_code}"
        assert set(response["Allow"].replace(" ", "").split(",")) == serves, f"{method} {path}"
