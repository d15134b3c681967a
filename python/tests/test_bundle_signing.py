"""Signed bundles from Python: ``Runtime(bundle_pubkey=...)`` reaches the C ABI's options, so with a
public key an unsigned bundle is refused (a warning naming the bundle and the rule, through
logging), without one it is read as before; a file that is no public key raises ConfigError
naming it."""

from __future__ import annotations

import secrets

import pytest

import metrale


def _public_key(path):
    path.write_text("metrale-jit ed25519 public key\n" + secrets.token_hex(32) + "\n")
    return path


def test_an_unsigned_bundle_is_refused_under_a_public_key(tmp_path, caplog):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "bundle.json").write_text('{"format": "metrale-bundle", "version": 1, "library": "x", "entries": []}')
    key = _public_key(tmp_path / "signer.pub")
    with caplog.at_level("INFO", logger="metrale"):
        with metrale.Runtime("host", bundle_dirs=[str(bundle)], bundle_pubkey=str(key)):
            pass
    refused = [r.getMessage() for r in caplog.records if r.name == "metrale" and "is refused" in r.getMessage()]
    assert any(str(bundle) in line and "is unsigned" in line and str(key) in line for line in refused), refused
    caplog.clear()
    with caplog.at_level("INFO", logger="metrale"):
        with metrale.Runtime("host", bundle_dirs=[str(bundle)]):
            pass
    assert not any("is refused" in r.getMessage() for r in caplog.records if r.name == "metrale")


def test_a_public_key_file_that_is_no_key_is_named(tmp_path):
    garbage = tmp_path / "garbage.pub"
    garbage.write_text("not a key\n")
    with pytest.raises(metrale.ConfigError, match=str(garbage)):
        metrale.Runtime("host", bundle_pubkey=str(garbage))
    with pytest.raises(metrale.ConfigError, match="missing.pub"):
        metrale.Runtime("host", bundle_dirs=[str(tmp_path)], bundle_pubkey=str(tmp_path / "missing.pub"))
    with pytest.raises(metrale.ArgumentError, match="bundle_pubkey"):
        metrale.Runtime("host", bundle_pubkey="")
