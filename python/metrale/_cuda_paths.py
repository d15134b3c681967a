"""Where the library looks for the running environment's NVIDIA wheels (NVRTC and the CUDA
headers kernels include), and the package's own data folders.

The C++ side reads METRALE_PYTHON_SITE_PACKAGES (':'-separated site-packages folders) when it
first needs NVRTC (src/jit/cuda_search.hpp). ``export_site_dirs()`` sets it, unless the user
already did, to every folder of ``sys.path`` and ``site`` that holds an ``nvidia/`` package, so
``pip install metrale[cu13]`` (or ``[cu12]``, or torch's own CUDA wheels) is found with no
CUDA toolkit on the machine. Invariant: imported before ``_native`` (nothing has been compiled
yet, so the library has not looked); it never overrides a value the user set.
"""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

VARIABLE = "METRALE_PYTHON_SITE_PACKAGES"


def site_dirs() -> list[str]:
    """The site-packages folders of this interpreter that hold NVIDIA wheels, in ``sys.path`` order."""
    candidates: list[str] = list(sys.path)
    try:
        candidates += site.getsitepackages()
    except AttributeError:  # a virtualenv's old site.py
        pass
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else ""
    if user:
        candidates.append(user)
    out: list[str] = []
    for entry in candidates:
        if not entry or entry in out:
            continue
        if (Path(entry) / "nvidia").is_dir():
            out.append(entry)
    return out


def export_site_dirs() -> None:
    """Sets METRALE_PYTHON_SITE_PACKAGES for the library (and child processes), unless already set."""
    if os.environ.get(VARIABLE):
        return
    dirs = site_dirs()
    if dirs:
        os.environ[VARIABLE] = os.pathsep.join(dirs)


def package_dir() -> Path:
    """The installed package's folder (metrale/)."""
    return Path(__file__).resolve().parent


def cli_binary() -> Path | None:
    """The metrale-jit binary the wheel ships (metrale/bin/metrale-jit), or METRALE_JIT_CLI."""
    explicit = os.environ.get("METRALE_JIT_CLI")
    if explicit:
        return Path(explicit)
    shipped = package_dir() / "bin" / "metrale-jit"
    return shipped if shipped.is_file() else None


def hardware_dir() -> Path:
    """The shipped targets' HARDWARE.toml files (metrale/share/hardware/<target>/HARDWARE.toml):
    the starting point of an engine's own target file."""
    return package_dir() / "share" / "hardware"


def templates_dir() -> Path:
    """The library's kernel templates (metrale/share/templates/*.cuh), as the wheel ships them."""
    return package_dir() / "share" / "templates"
