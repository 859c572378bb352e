#!/usr/bin/env python3
"""Generates docs/diagnostics.md from the diagnostic tests, so the catalog lists
exactly the errors that are tested, with the message each test checks.

  python3 scripts/gen-diagnostics-doc.py          # rewrite docs/diagnostics.md
  python3 scripts/gen-diagnostics-doc.py --check  # fail if it is out of date
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "diagnostics.md")


def unescape(check):
    """A FileCheck pattern back to plain text: {{regex}} parts inside it shown as ...,
    trailing ones and {{^}}/{{$}} removed."""
    text = re.sub(r"\{\{\^\}\}", "", check)
    text = re.sub(r"\{\{\$\}\}", "", text)
    text = re.sub(r"\s*\{\{[^}]*\}\}\s*$", "", text)  # a trailing one: the line goes on
    text = re.sub(r"\{\{[^}]*\}\}", "...", text)  # elsewhere: text that varies
    return text.strip()


def frontend_entries():
    entries = []
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "Frontend", "errors", "*"))):
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
        comment = [l.lstrip("/# ").strip() for l in lines
                   if (l.startswith("//") or l.startswith("#")) and "RUN:" not in l
                   and "CHECK" not in l and "REQUIRES" not in l]
        checks = [l.split("CHECK:", 1)[1] for l in lines if "CHECK:" in l]
        nexts = [l.split("CHECK-NEXT:", 1)[1] for l in lines if "CHECK-NEXT:" in l]
        message = next((unescape(c) for c in checks if "error:" in c), None)
        if not message:
            continue
        message = message.split("error:", 1)[1].strip()
        source = unescape(nexts[0]) if nexts else ""
        entries.append((os.path.basename(path), comment[0] if comment else "", message, source))
    return entries


def driver_entries():
    entries = []
    for path in [os.path.join(ROOT, "test", "kilnc", "driver-errors.test"),
                 os.path.join(ROOT, "test", "kilnc", "matrix-units.test"),
                 os.path.join(ROOT, "test", "Target", "target-errors.test"),
                 os.path.join(ROOT, "test", "Target", "NVPTX", "dynamic-shared-memory.test"),
                 os.path.join(ROOT, "test", "Target", "NVPTX", "dropped-arch.test"),
                 os.path.join(ROOT, "test", "tools", "kiln-run-errors.test"),
                 os.path.join(ROOT, "test", "tools", "kiln-run-npy.test"),
                 os.path.join(ROOT, "test", "tools", "kiln-run-bundle.test")]:
        for line in open(path).read().splitlines():
            m = re.match(r"# [A-Z0-9-]+: (.*error: .*)", line)
            if m:
                entries.append((os.path.relpath(path, ROOT), unescape(m.group(1))))
    return entries


def render():
    out = ["# Diagnostics", "",
           "Every error Kiln reports, with the test that pins it. Generated from the tests by",
           "`scripts/gen-diagnostics-doc.py`; a lit test fails when this page is stale.", "",
           "Source errors read `FILE:LINE:COL: error: message`, then the source line and a",
           "caret under the offending token; the exit status is 1 and nothing crashes.",
           "Errors about the file as a whole read `FILE: error: message`; command-line",
           "mistakes read `kilnc: error: message`, except those LLVM's option parser finds",
           "first: `kilnc: Unknown command line argument '--bogus'.`, `kilnc: for the --emit",
           "option: Cannot find option named 'foo'!` (exit status 1 too). Without an input",
           "file kilnc reads the source from standard input (`<stdin>` in messages). MLIR",
           "verifier errors inside a pipeline are reported at the .kiln location too, without",
           "IR dumps.", "",
           "## The language (kilnc, kiln::Session)", "",
           "| test | what | message | at |", "|---|---|---|---|"]
    for name, what, message, source in frontend_entries():
        cell = lambda s: s.replace("|", "\\|").replace("`", "'")
        out.append(f"| `{name}` | {cell(what)} | `{cell(message)}` | `{cell(source)}` |")
    out += ["", "## Targets and tools", "", "| test | message |", "|---|---|"]
    for name, message in driver_entries():
        out.append(f"| `{name}` | `{message.replace('|', chr(92) + '|')}` |")
    out += ["", "## The runtime", "",
            "Launch and load errors name the kernel and the argument; they are listed with",
            "their tests in test/runtime/RuntimeTest.cpp, test/e2e/LaunchTest.cpp and",
            "test/session/SessionTest.cpp (see [runtime.md](runtime.md)).", "",
            "On lavapipe (`vulkan:*:cpu`) a launch whose loops llvmpipe cut short at its",
            "65535-iteration limit fails instead of returning wrong results: `kernel 'K' failed a",
            "device_assert: pid (x, y, z) ran a loop past lavapipe's limit: llvmpipe ends every",
            "loop of a thread once its loops have run 65535 iterations in all, and the results",
            "would be wrong (give each program less work, or run on another device)`",
            "(`DeviceAgreement.LoopsLavapipeWouldCutFailTheLaunch`; targets.md has how).", ""]
    return "\n".join(out)


def main():
    text = render()
    if "--check" in sys.argv:
        current = open(DOC).read() if os.path.exists(DOC) else ""
        if current != text:
            sys.stderr.write("docs/diagnostics.md is out of date: run scripts/gen-diagnostics-doc.py\n")
            return 1
        return 0
    open(DOC, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
