#!/usr/bin/env python3
"""gpu_tests_read_no_source_path.py TESTS_DIR: the GPU tests (TESTS_DIR/gpu/*.cpp) run on a device
machine from binaries staged elsewhere (tools/device_check.sh), where the build's source folder
does not exist: a file they read must come through test_source_dir() (METRALE_TEST_SOURCE_DIR,
which the device check sets to the checkout sent along). This lint follows each GPU test's quoted
includes that resolve under TESTS_DIR, transitively, and fails on any use of the build's own paths
(METRALE_SOURCE_DIR, METRALE_BINARY_DIR, PROJECT_SOURCE_DIR) outside the one allowed definition,
tests/support/test_source_dir.hpp. Prints file:line of each use; exit 1 when there is one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

BUILD_PATHS = re.compile(r"\b(METRALE_SOURCE_DIR|METRALE_BINARY_DIR|PROJECT_SOURCE_DIR)\b")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
ALLOWED = Path("support/test_source_dir.hpp")


def reached(tests: Path) -> list[Path]:
    """Every file under `tests` a GPU test includes, the tests first."""
    todo = sorted((tests / "gpu").glob("*.cpp"))
    seen: list[Path] = []
    while todo:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.append(path)
        for name in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
            for base in (path.parent, tests):
                candidate = (base / name).resolve()
                if candidate.is_file() and tests.resolve() in candidate.parents:
                    todo.append(candidate)
                    break
    return seen


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tests = Path(sys.argv[1]).resolve()
    if not (tests / "gpu").is_dir():
        print(f"gpu_tests_read_no_source_path: {tests}/gpu is not a folder", file=sys.stderr)
        return 2
    files = reached(tests)
    problems = 0
    for path in files:
        if path.relative_to(tests) == ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if BUILD_PATHS.search(line) and not line.lstrip().startswith("//"):
                print(f"{path.relative_to(tests.parent)}:{number}: reads the build's source path; "
                      f"use test_source_dir() ({ALLOWED}): {line.strip()}")
                problems += 1
    print(f"gpu_tests_read_no_source_path: {len(files)} files checked, {problems} use(s) of the build's paths")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
