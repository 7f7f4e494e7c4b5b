"""One source built by two callers at once compiles once (gpu_harness.build's per-entry lock): the second waits
for the first's build and finds it in the cache. Without the lock both would run the compiler, as two evaluations
of one candidate, or two test workers building the released attention kernel, once did."""

import threading
from pathlib import Path

from gpu_harness import build as build_module

from .conftest import needs_gxx

NAIVE = Path(__file__).resolve().parents[2] / "tasks" / "matmul_cpu" / "naive.cpp"


def _build_twice_at_once(source: Path) -> list[build_module.BuildResult]:
    start = threading.Barrier(2)
    results: list[build_module.BuildResult] = []

    def one() -> None:
        start.wait()
        results.append(build_module.build(source, "cpp"))

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return results


@needs_gxx
def test_two_builds_of_one_source_at_once_run_the_compiler_once(tmp_path, monkeypatch):
    monkeypatch.setenv("KSEEK_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "kernel.cpp"
    source.write_text(NAIVE.read_text() + f"\n// {tmp_path.name}\n")  # a source no cache has seen
    results = _build_twice_at_once(source)
    assert len(results) == 2 and all(r.ok for r in results), [r.reason for r in results]
    assert sorted(r.cache_hit for r in results) == [False, True]
    assert results[0].lib_path == results[1].lib_path


@needs_gxx
def test_a_cache_folder_where_no_lock_can_be_made_still_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("KSEEK_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "kernel.cpp"
    source.write_text(NAIVE.read_text())

    real_open = build_module.os.open

    def no_lock_file(path, *args, **kwargs):
        if str(path).endswith(".lock"):
            raise PermissionError(f"read-only cache folder: {path}")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(build_module.os, "open", no_lock_file)
    result = build_module.build(source, "cpp")
    assert result.ok and not result.cache_hit, result.reason


def test_the_default_arch_named_or_not_is_one_cache_entry():
    source = NAIVE.read_text()
    named = build_module.cache_key(source, "cuda", build_module.DEFAULT_ARCH)
    assert build_module.cache_key(source, "cuda", None) == named
    assert build_module.cache_key(source, "cuda", "sm_100a") != named
