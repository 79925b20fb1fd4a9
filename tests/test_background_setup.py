"""tests/background_setup.py: a test waits for a set-up step scripts/test.sh runs in the
background, then goes on, or fails with the step's log."""

from __future__ import annotations

import threading

import pytest
from background_setup import wait_for


def test_nothing_to_wait_for_outside_scripts_test_sh(monkeypatch):
    monkeypatch.delenv("PPL_WIDGET_TEST_SETUP", raising=False)
    wait_for("vllm-env", timeout_s=0)


def test_a_step_test_sh_did_not_start_is_not_waited_for(monkeypatch, tmp_path):
    monkeypatch.setenv("PPL_WIDGET_TEST_SETUP", str(tmp_path))
    wait_for("debian-packages", timeout_s=0)


def test_a_running_step_is_waited_for_until_it_ends_well(monkeypatch, tmp_path):
    monkeypatch.setenv("PPL_WIDGET_TEST_SETUP", str(tmp_path))
    (tmp_path / "vllm-env.log").write_text("installing\n")
    waiting = threading.Thread(target=wait_for, args=("vllm-env", 600))
    waiting.start()
    assert waiting.is_alive()  # no status yet: still waiting
    (tmp_path / "vllm-env.rc").write_text("0\n")
    waiting.join(60)
    assert not waiting.is_alive()


def test_a_failed_step_fails_the_test_with_its_log(monkeypatch, tmp_path):
    monkeypatch.setenv("PPL_WIDGET_TEST_SETUP", str(tmp_path))
    (tmp_path / "llama-vocab.log").write_text("pip: no matching distribution\n")
    (tmp_path / "llama-vocab.rc").write_text("1\n")
    with pytest.raises(pytest.fail.Exception, match="no matching distribution"):
        wait_for("llama-vocab")


def test_a_step_that_never_ends_fails_after_the_timeout(monkeypatch, tmp_path):
    monkeypatch.setenv("PPL_WIDGET_TEST_SETUP", str(tmp_path))
    (tmp_path / "debian-packages.log").write_text("")
    with pytest.raises(pytest.fail.Exception, match="still running"):
        wait_for("debian-packages", timeout_s=0)
