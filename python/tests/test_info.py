"""The package finds the environment's NVIDIA wheels for the library (METRALE_PYTHON_SITE_PACKAGES,
metrale._cuda_paths) and runs the CLI as ``metrale-jit`` / ``python -m metrale`` (metrale._cli):
``info --json`` reports NVRTC, the CUDA headers, the driver and the cache folder."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from metrale import _cli, _cuda_paths


def test_site_dirs_are_the_path_entries_holding_nvidia_wheels(tmp_path, monkeypatch):
    rng = random.Random(0x5173)
    with_wheels = tmp_path / f"site{rng.randrange(10**6)}"
    (with_wheels / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    without = tmp_path / "plain"
    without.mkdir()
    monkeypatch.setattr(sys, "path", [str(without), str(with_wheels), str(with_wheels)])
    dirs = _cuda_paths.site_dirs()
    assert str(with_wheels) in dirs
    assert str(without) not in dirs
    assert dirs.count(str(with_wheels)) == 1

    monkeypatch.delenv(_cuda_paths.VARIABLE, raising=False)
    _cuda_paths.export_site_dirs()
    assert str(with_wheels) in os.environ[_cuda_paths.VARIABLE].split(os.pathsep)
    # A value the user set is never replaced.
    monkeypatch.setenv(_cuda_paths.VARIABLE, "/mine")
    _cuda_paths.export_site_dirs()
    assert os.environ[_cuda_paths.VARIABLE] == "/mine"


def test_a_missing_cli_binary_is_a_message_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("METRALE_JIT_CLI", raising=False)
    monkeypatch.setattr(_cuda_paths, "package_dir", lambda: tmp_path)
    assert _cli.main(["info"]) == 2
    assert "no CLI binary" in capsys.readouterr().err


@pytest.mark.skipif(not os.environ.get("METRALE_JIT_CLI") and _cuda_paths.cli_binary() is None,
                    reason="no metrale-jit binary (METRALE_JIT_CLI or the wheel's metrale/bin)")
def test_python_m_metrale_info_json_reports_every_part():
    out = subprocess.run([sys.executable, "-m", "metrale", "info", "--json"], capture_output=True, text=True,
                         check=True, timeout=120)
    info = json.loads(out.stdout)
    assert set(info) >= {"metrale", "nvrtc", "cuda_headers", "driver", "cache"}
    assert isinstance(info["nvrtc"]["found"], bool)
    assert info["nvrtc"]["searched"], "the places searched are listed"
    if not info["nvrtc"]["found"]:
        assert info["nvrtc"]["reason"].startswith("no NVRTC was found")
