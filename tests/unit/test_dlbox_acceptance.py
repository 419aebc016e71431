"""playbooks/files/dlbox-acceptance.py on this machine without a GPU, and its reading of fio's JSON.

The `fio` here is a FAKE on PATH (a shell script printing fio's --output-format=json shape: jobs[0].read.bw_bytes,
as fio 3.x documents it); the real fio runs in the Molecule scenario `fitness`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "playbooks" / "files" / "dlbox-acceptance.py"


def run(tmp_path, path):
    env = dict(os.environ, PATH=path)
    out = subprocess.run([sys.executable, str(SCRIPT), "--host", "t1", "--envs-root", str(tmp_path / "envs"),
                          "--data-dir", str(tmp_path), "--fio-size", "1M"],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def test_no_gpu_is_a_finding_and_every_skip_has_a_reason(tmp_path):
    result = run(tmp_path, "/nonexistent")
    assert result["checks"]["nvidia_smi"]["status"] == "finding"
    assert result["checks"]["docker"] == {"status": "skipped", "label": "docker run --gpus all", "reason": "no Docker"}
    assert result["checks"]["environments"]["status"] == "skipped"
    assert result["skipped"]["matmul"] == "no GPU"
    assert result["skipped"]["dataloader"].startswith("no environment with PyTorch")
    assert result["skipped"]["fio"] == "fio is not installed (apt-get install fio)"


def test_fio_json_is_read_and_its_file_removed(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "fio"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in --filename=*) : > "${a#--filename=}";; esac; done\n'
                    'echo "note: a line before the JSON"\necho \'{"jobs": [{"read": {"bw_bytes": 1500000000}}]}\'\n')
    fake.chmod(0o755)
    result = run(tmp_path, "%s:/usr/bin:/bin" % bin_dir)
    assert result["figures"]["fio_seq_read_mb_s"] == 1500.0
    assert "fio_note" not in result                                   # O_DIRECT accepted (the first try)
    assert not (tmp_path / "dlbox-acceptance.fio").exists()
