"""Tuning tables from Python (ABI 8), on the host backend as tests/capi/capi_tuning.c does from C:
``Runtime.tune`` returns (and writes) a table with the FP8 twin's row; a Runtime given it
(``tuning_table=``) says it uses one row (``tuning_status``) and explain names the table's row as
the twin's ``threshold_origin``; a table edited by hand raises ConfigError naming the edit.
(Which thresholds the guards then take is tests/unit/runtime_tuning_test.cpp's.)"""

from __future__ import annotations

import re

import pytest

import metrale

HEADER = "# metrale-jit tuning table"
K = 1024


def _runtime(**options) -> metrale.Runtime:
    """The runtime of every test here: host backend, 8 SMs, no verification, the FP8 twin asked for."""
    return metrale.Runtime("host", target="hopper", host_sm_count=8, verify=False,
                           levers={"fp8_act_quant_hopper": True}, **options)


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> tuple[str, str]:
    """A table tuned for FP8 (by its alias) at k 1024 over M in {1, 2, 4}: (its path, its text)."""
    path = str(tmp_path_factory.mktemp("tuning") / "fp8.toml")
    with _runtime(tuning_table="") as rt:
        text = rt.tune("fp8-quant", m=[1, 2, 4], k=[K], repeats=2, out=path)
    return path, text


def test_tune_returns_and_writes_a_table_with_the_fp8_row(table):
    path, text = table
    with open(path, encoding="utf-8") as written:
        assert written.read() == text
    assert text.startswith(HEADER)
    assert 'op = "fp8_act_quant"' in text and 'role = "twin"' in text
    assert re.search(rf"^k = {K}$", text, re.M) and re.search(r"^repeats = 2$", text, re.M)
    assert "ssm_ba_gates" not in text  # only the op asked for


def test_tune_without_out_returns_the_text_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with _runtime(tuning_table="") as rt:
        text = rt.tune(["fp8_act_quant"], m=[1, 2], k=[K], repeats=1)
    assert text.startswith(HEADER) and 'op = "fp8_act_quant"' in text
    assert list(tmp_path.iterdir()) == []  # nothing written where the caller stands


def test_a_runtime_given_the_table_uses_its_row(table):
    path, _ = table
    with _runtime(tuning_table=path) as rt:
        assert "1 row in use" in rt.tuning_status and path in rt.tuning_status
        twin = rt.explain("fp8_act_quant", k=K).role_explanation("twin")
        assert "tuning table" in twin.threshold_origin and path in twin.threshold_origin
        assert "row 1" in twin.threshold_origin
        assert "row 1" in twin.line()
    with _runtime(tuning_table="") as plain:  # the same runtime without it: the prediction
        assert plain.tuning_status == ""
        assert plain.explain("fp8_act_quant", k=K).role_explanation("twin").threshold_origin == "prediction"


def test_a_table_edited_by_hand_is_a_config_error_naming_the_edit(table, tmp_path):
    _, text = table
    at = text.index("role_us = ") + len("role_us = ")
    edited = tmp_path / "edited.toml"
    edited.write_text(text[:at] + ("8" if text[at] == "9" else "9") + text[at + 1:], encoding="utf-8")
    with pytest.raises(metrale.ConfigError, match="edited"):
        _runtime(tuning_table=str(edited))
    (tmp_path / "same.toml").write_text(text, encoding="utf-8")  # the same text unedited opens
    with _runtime(tuning_table=tmp_path / "same.toml") as rt:
        assert "1 row in use" in rt.tuning_status


def test_refusals_name_what_is_wrong(tmp_path):
    with pytest.raises(metrale.ConfigError, match="absent.toml"):
        _runtime(tuning_table=str(tmp_path / "absent.toml"))
    with pytest.raises(metrale.ArgumentError, match="tuning_table=5"):
        _runtime(tuning_table=5)
    with _runtime(tuning_table="") as rt:
        with pytest.raises(metrale.ArgumentError, match="no_such_op"):
            rt.tune("no_such_op", m=[1], k=[K], repeats=1)
        with pytest.raises(metrale.ArgumentError, match=r"m\[0\]=-1"):
            rt.tune("fp8-quant", m=[-1], k=[K])
        with pytest.raises(metrale.ArgumentError, match="repeats=0"):
            rt.tune("fp8-quant", m=[1], k=[K], repeats=0)
        with pytest.raises(metrale.ConfigError, match="no-such-folder"):
            rt.tune("fp8-quant", m=[1], k=[K], repeats=1, out=tmp_path / "no-such-folder" / "t.toml")
    with pytest.raises(metrale.ClosedError):
        rt.tuning_status
    with pytest.raises(metrale.ClosedError):
        rt.tune("fp8-quant", m=[1], k=[K], repeats=1)
