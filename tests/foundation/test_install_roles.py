"""Installs by role (README, "Installing by role"): a dashboard host installs the base (no torch), a GPU host the
gpu extra, development the dev extra. Read from pyproject.toml; no environment is built here (too slow)."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
GPU_STACK = ("torch", "cupy", "nvidia-", "triton", "jax")


def names(requirements: list[str]) -> list[str]:
    return [re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower() for requirement in requirements]


def test_the_dashboard_hosts_base_install_lists_no_gpu_package():
    base = names(PROJECT["dependencies"])
    assert "django" in base and "daphne" in base
    assert not [name for name in base if name.startswith(GPU_STACK)], base


def test_the_gpu_extra_lists_torch_and_only_what_the_code_imports():
    gpu = names(PROJECT["optional-dependencies"]["gpu"])
    assert gpu == ["torch"]
    sources = [
        p.read_text(errors="replace") for folder in ("gpu_harness", "kernels") for p in (ROOT / folder).rglob("*.py")
    ]
    for module in gpu:
        assert any(re.search(rf"^\s*(import|from) {module}\b", text, re.M) for text in sources), module


def test_the_dev_extra_pins_the_cpu_torch_and_the_test_tools():
    dev = PROJECT["optional-dependencies"]["dev"]
    assert "torch==2.13.0" in dev
    assert {"pytest", "pytest-django", "playwright", "ruff"} <= set(names(dev))


def test_the_dashboard_starts_and_serves_its_modules_without_torch(tmp_path):
    # A dashboard host has no torch: settings, URLs, views, consumers and the system checks load without it.
    probe = (
        "import sys\n"
        "for name in ('torch', 'cupy'): sys.modules[name] = None  # `import torch` now raises ImportError\n"
        "import django\ndjango.setup()\n"
        "from django.core.management import call_command\ncall_command('check')\n"
        "import kseek_site.asgi, kseek_site.urls, runs.views, runs.consumers, runs.routing\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "kseek_site.settings",
            "KSEEK_DATA_DIR": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
