"""`python -m gpu_harness.service` takes a request's `timeout_s` as a finite positive number of seconds, and
answers anything else with an error (docs/harness.md: a bad request gets an `error`). 1e999, valid JSON that
reads as infinity, and NaN were taken as no overall bound at all, and `true` as one second."""

import json

import pytest

from gpu_harness.service import _request_error

BASE = {"task": "matmul_cpu", "kernel": "/k.cpp"}


@pytest.mark.parametrize("value", [1, 0.5, 600, 1e300])
def test_a_finite_positive_timeout_is_taken(value):
    assert _request_error({**BASE, "timeout_s": value}) is None


@pytest.mark.parametrize("text", ["1e999", "-1e999", "NaN", "Infinity", "true", "0", "-1", '"600"'])
def test_any_other_timeout_is_a_bad_request_naming_the_field(text):
    request = json.loads(json.dumps(BASE)[:-1] + f', "timeout_s": {text}}}')
    assert _request_error(request) == "request field 'timeout_s' must be a finite positive number of seconds"
