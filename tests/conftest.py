import os

import pytest

# Tests that need a GPU carry @pytest.mark.gpu and are skipped where none is present (CI never has one).


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (none on this machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def database_url_in_use() -> str:
    return os.environ.get("DATABASE_URL", "")
