"""The ``metrale-jit`` console script and ``python -m metrale``: run the CLI binary the wheel
ships (metrale/bin/metrale-jit) with this interpreter's NVIDIA wheels made known to it
(METRALE_PYTHON_SITE_PACKAGES, see _cuda_paths), so ``metrale-jit info`` and ``metrale-jit build
--target hopper`` work after ``pip install metrale[cu13]`` with no checkout and no toolkit.
Invariant: the binary's exit code is the command's; a missing binary is a message and exit 2.
"""

from __future__ import annotations

import os
import sys

from . import _cuda_paths


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    binary = _cuda_paths.cli_binary()
    if binary is None:
        sys.stderr.write(
            "metrale-jit: this installation has no CLI binary (metrale/bin/metrale-jit); "
            "reinstall the wheel, or set METRALE_JIT_CLI to a metrale-jit binary\n"
        )
        return 2
    _cuda_paths.export_site_dirs()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(str(binary), [str(binary), *args])
    except OSError as error:
        sys.stderr.write(f"metrale-jit: cannot run {binary}: {error}\n")
        return 2
    return 0  # not reached: execv replaced the process


if __name__ == "__main__":
    raise SystemExit(main())
