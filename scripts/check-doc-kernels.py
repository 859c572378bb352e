#!/usr/bin/env python3
"""Compiles every complete kernel in the given Markdown files: each ```kiln block
whose first line that is not a comment starts with `kernel` or `fn` goes through
`kilnc --emit=kiln`. Prints the failures and exits 1 if there are any.

  python3 scripts/check-doc-kernels.py KILNC docs/from-triton.md docs/language.md
"""
import re
import subprocess
import sys
import tempfile


def blocks(path):
    text = open(path, encoding="utf-8").read()
    for match in re.finditer(r"^```kiln\n(.*?)^```", text, re.S | re.M):
        code = match.group(1)
        lines = [l for l in code.splitlines() if l.strip() and not l.strip().startswith("//")]
        if lines and re.match(r"(kernel|fn)\b", lines[0]):
            yield text.count("\n", 0, match.start()) + 2, code


def main():
    kilnc, paths = sys.argv[1], sys.argv[2:]
    checked = failed = 0
    for path in paths:
        for line, code in blocks(path):
            checked += 1
            with tempfile.NamedTemporaryFile("w", suffix=".kiln") as f:
                f.write(code)
                f.flush()
                run = subprocess.run([kilnc, f.name, "--emit=kiln", "-o", "/dev/null"],
                                     capture_output=True, text=True)
            if run.returncode != 0:
                failed += 1
                print(f"{path}:{line}: this kernel does not compile:\n{run.stderr}")
    print(f"{checked} kernels checked, {failed} failed")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
