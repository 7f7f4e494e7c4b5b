"""The header check reads the source as the compiler does.

Each hiding place below is a source whose forbidden include the preprocessor really performs (checked with
`g++ -E`, so the test cannot pass on a source the compiler would not read that way), and the header check must
refuse it. The legitimate look-alikes must pass: a check that refused everything would be no check.
"""

import os
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
    assert report.ok is False and f"'{tool}'" in report.reason


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


# ---- the lexer's exact view: what each construct leaves for the directive scan --------------------------------

# (source, what the header check scans): comments become one space, raw strings their quotes only, ordinary
# literals stay on their line, line continuations are joined.
LEXED = [
    ("// tail without newline", ""),
    ("a /* one */ b /* two */ c", "a   b   c"),
    ("a/**/b", "a b"),
    ('x = "abc" /*\ny */ z', 'x = "abc"   z'),
    ('x = "a\\"b" y', 'x = "a\\"b" y'),
    ("c = '\\'' d", "c = '\\'' d"),
    ('x = "unterminated\nnext', 'x = "unterminated\nnext'),
    ('x = "at end', 'x = "at end'),
    ('R"(raw)" tail', 'R"" tail'),
    ('R"()" tail', 'R"" tail'),
    ('u8R"d(a)" b)d" tail', 'u8R"" tail'),
    ('R"d(never closed\nline', 'R""'),
    ('R"abcdefghijklmnop(x)abcdefghijklmnop" tail', 'R"" tail'),  # a 16-character delimiter, the most allowed
    ('R"abcdefghijklmnopq(x)abcdefghijklmnopq" tail', 'R"abcdefghijklmnopq(x)abcdefghijklmnopq" tail'),  # 17: no
    ('R"a b(x)a b" tail', 'R"a b(x)a b" tail'),  # a space is no delimiter character
    ('R"abcdefghijklmnopqrstuvwxyz', 'R"abcdefghijklmnopqrstuvwxyz'),  # no "(" at all: no raw string
    ("a\\\r\nb", "ab"),
    ("a\\\nb", "ab"),
    ("a\\\r\nb\\\r\nc", "abc"),
    ("n = 0x1'0'0; m", "n = 0x1'0'0; m"),
    ("n = 1'0; X = 'y'", "n = 1'0; X = 'y'"),
    ('xR"(a)" b', 'xR"(a)" b'),  # xR is no raw-string prefix
    ('R"(a)"x', 'R""x'),
    ('"//" after', '"//" after'),
    ("'/*' after", "'/*' after"),
    ('R"(a)" R"(b)" end', 'R"" R"" end'),
    ('R"x(one)x" mid )x" end', 'R"" mid )x" end'),
    ('"a"/* c */b', '"a" b'),  # the scan goes on right after a literal's closing quote
    ('x = "abc\n/* c */ y', 'x = "abc\n  y'),  # an unterminated literal ends with its line
    ('R" x(a) x" tail', 'R" x(a) x" tail'),  # a delimiter may not start with a space either
    ('R"X(a)X" tail', 'R"" tail'),
    ("a /* never closed", "a  "),
]


@pytest.mark.parametrize(("source", "scanned"), LEXED)
def test_the_lexer_leaves_exactly_what_the_preprocessor_sees(source, scanned):
    assert depcheck._strip_comments(source) == scanned


@needs_gxx
@pytest.mark.parametrize(
    "source",
    [
        "/**/#include <thread>\n",  # an empty comment, then the directive: still first on its line
        "// a line comment holding /*\n#include <thread>\n// */\n",
        "int x = 0x1'0; /* a */ int y;\n#include <thread>\n",
        'R"(a)"\n#include <thread>\n',  # a raw string at the very start of the file
    ],
)
def test_more_includes_the_compiler_performs_are_refused(source, tmp_path):
    assert "class thread" in preprocessed(source, tmp_path)
    assert not depcheck.check_headers(source, "cpp").ok


@needs_gxx
@pytest.mark.parametrize(
    "source",
    [
        "int a = 0x1'0; /*\n#include <thread>\n*/\n",  # a separator in a hexadecimal number
        "int X = 1; /*\n#include <thread>\n*/\n",
        'auto s = R"(a)"x; /*\n#include <thread>\n*/\n',
    ],
)
def test_more_look_alikes_pass(source, tmp_path):
    assert "class thread" not in preprocessed(source, tmp_path)
    assert depcheck.check_headers(source, "cpp").ok


def test_every_directive_is_read_after_a_refused_one():
    report = depcheck.check_headers('#import <a>\n#include "b.h"\n#include <thread>\n#include <cstdint>\n', "cpp")
    assert report.refused == [
        "#import <a>",
        '#include "b.h" (only <system> headers; the kernel is one file)',
        "<thread>",
    ]
    assert report.includes == ["thread", "cstdint"]


# ---- symbols ---------------------------------------------------------------------------------------------------


def test_a_symbols_version_is_everything_after_its_first_at_sign():
    assert depcheck.symbol_allowed("memcpy@GLIBC_2.14") and depcheck.symbol_allowed("memcpy@@GLIBC_2.14")
    assert not depcheck.symbol_allowed("dlopen@GLIBC_2.34")


def test_the_hard_deny_list_wins_over_the_allowlist_whatever_the_case(monkeypatch):
    # belt and braces: a future allowlist entry naming a stream, a cuBLAS call or a thread stays refused
    for name in ("cudaStreamCreate", "cublasSgemm_v2", "pthread_create", "DLOPEN"):
        monkeypatch.setattr(depcheck, "ALLOWED_SYMBOLS", depcheck.ALLOWED_SYMBOLS | {name})
        assert not depcheck.symbol_allowed(name), name


@needs_binutils
def test_refused_symbols_are_named_without_their_version(tmp_path):
    src, lib = tmp_path / "k.cpp", tmp_path / "k.so"
    src.write_text('#include <unistd.h>\nextern "C" int kseek_probe(int x) { return x + getpid(); }\n')
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=120)
    report = depcheck.check_library(str(lib))
    assert report.ok is False and report.refused == ["getpid"]
    assert any(s.startswith("getpid@") for s in report.undefined)


@needs_binutils
def test_syscall_bytes_in_data_are_not_code(tmp_path):
    # 0f 05 is `syscall` when executed; as constant data it is harmless, and only code is disassembled
    src, lib = tmp_path / "k.cpp", tmp_path / "k.so"
    src.write_text(
        'extern "C" const unsigned char blob[] = {0x0f, 0x05, 0xcd, 0x80};\n'
        'extern "C" int kseek_probe(int x) { return x + blob[x & 3]; }\n'
    )
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=120)
    report = depcheck.check_library(str(lib))
    assert report.ok is True and report.raw_syscalls == []


@needs_binutils
@pytest.mark.parametrize("tool", ["nm", "objdump"])
def test_a_hanging_binutils_tool_fails_closed(tmp_path, monkeypatch, tool):
    lib = shared_library(tmp_path, "x += 1;")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / tool).write_text("#!/bin/sh\nexec sleep 30\n")
    (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(depcheck, "TOOL_TIMEOUT_S", 0.5)
    report = depcheck.check_library(lib)
    assert report.ok is False and "timed out" in report.reason
