"""Shared helpers for the integration tests (real ansible-playbook, real Docker)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def ansible_env() -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    env["ANSIBLE_COLLECTIONS_PATH"] = str(ROOT / "build" / "collections")
    env["ANSIBLE_INJECT_FACT_VARS"] = "false"
    env["ANSIBLE_NOCOLOR"] = "1"
    # as .config/molecule/config.yml: the controller's main loop polls its workers 200 times a second, not 1,000
    env["ANSIBLE_INTERNAL_POLL_INTERVAL"] = "0.005"
    # as .config/molecule/config.yml: modules run on this controller reuse their compiled code (tests/controller)
    env["PYTHONPATH"] = str(ROOT / "tests" / "controller")
    env["DLBOX_ZIPIMPORT_CACHE"] = str(ROOT / "build" / "zipimport-cache")
    env["DLBOX_ANSIBALLZ_CACHE"] = str(ROOT / "build" / "ansiballz-cache")
    for cache in ("zipimport-cache", "ansiballz-cache"):
        (ROOT / "build" / cache).mkdir(parents=True, exist_ok=True)
    return env


@pytest.fixture(scope="session")
def collection_installed():
    link = ROOT / "build" / "collections" / "ansible_collections" / "dlbox" / "stack"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("../../../.."), target_is_directory=True)
    return link


def docker_ready(image: str) -> str | None:
    """None when Docker answers and IMAGE exists, else the reason to skip."""
    if not shutil.which("docker"):
        return "no docker client"
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
        return "no Docker engine answers (make docker-engine starts one)"
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True, check=False).returncode != 0:
        return f"image {image} is missing (tests/images/build.sh builds it)"
    return None


def pytest_configure(config):
    """``heavy``: left out of ``make test`` (``pytest -m "not heavy"``), run by ``make test-heavy`` (``-m heavy``): the
    CI image builds (1.5 GB images, four BuildKit builds)."""
    config.addinivalue_line("markers", "heavy: left out of make test, run by make test-heavy")
