"""Every example README.md shows for C++, C, Python and Rust is, line for line, the region of a
tested file between its "README: <language> example" and "README: end" markers, so the
README cannot drift from what the tests run. Usage: check_readme_examples.py ROOT."""

import sys
from pathlib import Path

EXAMPLES = [
    ("C++", "tests/consumer/main.cpp"),
    ("C", "tests/capi/capi_host_ops.c"),
    ("Python", "python/tests/test_host_ops.py"),
    ("PyTorch", "python/tests/test_torch_ops.py"),
    ("Rust", "examples/rust-engine/tests/host_ops.rs"),
    ("C++ host CI", "tests/unit/corpus_cg_readme_test.cpp"),
]


def region(path: Path, language: str) -> str:
    lines = path.read_text().splitlines()
    begin = [i for i, line in enumerate(lines) if f"README: {language} example" in line]
    if len(begin) != 1:
        raise SystemExit(f"{path}: expected one 'README: {language} example' marker, found {len(begin)}")
    end = next((i for i in range(begin[0] + 1, len(lines)) if "README: end" in lines[i]), None)
    if end is None:
        raise SystemExit(f"{path}:{begin[0] + 1}: no 'README: end' marker after the example")
    return "\n".join(lines[begin[0] + 1 : end]).strip("\n")


def main() -> int:
    root = Path(sys.argv[1])
    readme = (root / "README.md").read_text()
    failed = 0
    for language, file in EXAMPLES:
        text = region(root / file, language)
        if not text or text not in readme:
            print(f"README.md does not show the {language} example of {file} verbatim:\n{text}")
            failed += 1
        else:
            print(f"README.md shows the {language} example of {file} ({len(text.splitlines())} lines)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
