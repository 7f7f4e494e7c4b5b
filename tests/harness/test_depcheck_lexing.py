"""The header check reads the source as the compiler does.

Each hiding place below is a source whose forbidden include the preprocessor really performs (checked with
`g++ -E`, so the test cannot pass on a source the compiler would not read that way), and the header check must
refuse it. The legitimate look-alikes must pass: a check that refused everything would be no check.
"""

import shutil
import subprocess

import pytest

from gpu_harness import depcheck

HAS_GXX = shutil.which("g++") is not None
needs_gxx = pytest.mark.skipif(not HAS_GXX, reason="needs g++")

# Each hides `#include <thread>` (or a <pthread.h>) from a naive reader; <thread> is a real header whose
# preprocessed text names std::thread, so `g++ -E` shows whether the compiler read it.
HIDDEN = {
    "a quote in a character literal starts a fake string that swallows a real one's opening quote": (
        'char a = \'"\'; const char *s = "/*";\n#include <thread>\nconst char *t = "*/";\n'
    ),
    "a raw string holding a comment opener": ('const char *r = R"(\n/*)";\n#include <thread>\n// */\n'),
    "a raw string with a delimiter": ('const char *r = R"xy(\n)" /* )xy";\n#include <thread>\n// */\n'),
    "a raw string whose end a line continuation seems to move": (
        'auto s = R"(x)\\\n" /* )";\n#include <thread>\n// */\n'
    ),
    "the digraph of #": "%:include <thread>\n",
    "an indented directive with spaces after the #": "  #  include <thread>\n",
    "a directive after a block comment on its line": "/* note */ #include <thread>\n",
    "a directive split by a line continuation": "#inc\\\nlude <thread>\n",
    "a string holding a comment opener on the line before": 'const char *s = "/*";\n#include <thread>\n// */\n',
    "a prefixed character literal holding a quote": (
        'auto a = u8\'"\'; const char *s = "/*";\n#include <thread>\nconst char *t = "*/";\n'
    ),
}


def preprocessed(source: str, tmp_path) -> str:
    path = tmp_path / "k.cpp"
    path.write_text(source)
    done = subprocess.run(["g++", "-std=c++17", "-E", str(path)], capture_output=True, text=True, timeout=60)
    return done.stdout


@needs_gxx
@pytest.mark.parametrize("why", sorted(HIDDEN))
def test_an_include_the_compiler_performs_is_refused_wherever_it_hides(why, tmp_path):
    source = HIDDEN[why]
    assert "class thread" in preprocessed(source, tmp_path), "the compiler does not read this include"
    report = depcheck.check_headers(source, "cpp")
    assert not report.ok and "<thread>" in report.reason, why


@pytest.mark.parametrize("directive", ["include_next", "import", "embed"])
def test_include_next_import_and_embed_are_refused_outright(directive):
    report = depcheck.check_headers(f"#{directive} <cstdint>\n", "cpp")
    assert not report.ok and f"#{directive}" in report.reason


# Legitimate code that looks like a hiding place: the compiler performs none of these includes.
NOT_INCLUDES = {
    "an include inside a raw string": 'const char *r = R"(\n#include <thread>\n)";\n',
    "an include inside a raw string with a look-alike terminator": 'auto r = R"d(\n)"\n#include <thread>\n)d";\n',
    "an include in a block comment opened after a digit separator": "int n = 1'000; /*\n#include <thread>\n*/\n",
    "an include in a comment after an escaped quote": "char c = '\\''; /*\n#include <thread>\n*/\n",
    "an include in a line comment continued onto the next line": "// note \\\n#include <thread>\n",
}


@needs_gxx
@pytest.mark.parametrize("why", sorted(NOT_INCLUDES))
def test_look_alikes_the_compiler_does_not_include_pass(why, tmp_path):
    source = NOT_INCLUDES[why] + "#include <cstdint>\n"
    assert "class thread" not in preprocessed(source, tmp_path)
    report = depcheck.check_headers(source, "cpp")
    assert report.ok, (why, report.reason)
    assert report.includes == ["cstdint"]


def test_a_quoted_include_is_refused_by_name():
    report = depcheck.check_headers('#include "helper.h"\n', "cpp")
    assert not report.ok and '"helper.h"' in report.reason


# ---- the built library: raw system calls and the tools that read it ----------------------------------------

HAS_BINUTILS = HAS_GXX and shutil.which("nm") is not None and shutil.which("objdump") is not None
needs_binutils = pytest.mark.skipif(not HAS_BINUTILS, reason="needs g++ and binutils")


def shared_library(tmp_path, body: str) -> str:
    src, lib = tmp_path / "k.cpp", tmp_path / "k.so"
    src.write_text(f'extern "C" int kseek_probe(int x) {{ {body} return x; }}\n')
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=120)
    return str(lib)


@needs_binutils
@pytest.mark.parametrize("instruction", ["syscall", "int $0x80", "sysenter"])
def test_a_raw_system_call_instruction_in_host_code_is_refused(tmp_path, instruction):
    lib = shared_library(tmp_path, f'if (x == 12345) asm volatile("{instruction}");')
    report = depcheck.check_library(lib)
    assert not report.ok and report.raw_syscalls and "raw system-call" in report.reason


@needs_binutils
def test_a_library_without_system_calls_or_foreign_symbols_passes(tmp_path):
    report = depcheck.check_library(shared_library(tmp_path, "x += 1;"))
    assert report.ok and report.reason is None and report.raw_syscalls == []


@needs_binutils
@pytest.mark.parametrize("tool", ["nm", "objdump"])
def test_a_missing_binutils_tool_fails_closed(tmp_path, monkeypatch, tool):
    lib = shared_library(tmp_path, "x += 1;")
    real_which = shutil.which
    monkeypatch.setattr(depcheck.shutil, "which", lambda name: None if name == tool else real_which(name))
    report = depcheck.check_library(lib)
    assert not report.ok and f"'{tool}'" in report.reason


@needs_binutils
@pytest.mark.parametrize("tool", ["nm", "objdump"])
def test_a_failing_binutils_tool_fails_closed(tmp_path, monkeypatch, tool):
    # A tool that exits non-zero (here: reading a file that is no library) must not read as "nothing found".
    bogus = tmp_path / "not-a-library.so"
    bogus.write_bytes(b"\x7fELF garbage")
    if tool == "objdump":  # nm must pass for objdump to be reached: give nm a real library's answer
        lib = shared_library(tmp_path, "x += 1;")
        real_run = subprocess.run
        monkeypatch.setattr(
            depcheck.subprocess,
            "run",
            lambda argv, **kw: real_run([*argv[:-1], lib if argv[0] == "nm" else argv[-1]], **kw),
        )
    report = depcheck.check_library(str(bogus))
    assert not report.ok and report.tool_error and f"{tool} failed" in report.reason
