# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real PyTorch 2.9.1 with torchvision and torchaudio from PyPI in a python_env environment (make test-heavy)."""

import datetime
import json

ENV = "/opt/dlbox/envs/torch"


def test_the_plans_torchaudio_was_installed_from_the_same_index_and_variant(host):
    manifest = json.loads(host.file(ENV + "/dlbox/manifest.json").content_string)
    stack = manifest["stack"]["pytorch"]
    assert stack["version"] == "2.9.1" and stack["variant"] == "pypi" and stack["torchaudio"] == "2.9.1"
    assert manifest["requirements"] == ["torch==2.9.1", "torchvision==0.24.1", "torchaudio==2.9.1"]
    assert manifest["pip_index_args"] == []  # PyPI's own index for all three, no PyTorch index
    assert manifest["wheels"]["majors"] == [12]


def test_import_torchaudio_works(host):
    result = host.run(ENV + "/bin/python -c 'import torch, torchaudio, torchvision; "
                      "print(torch.__version__, torchaudio.__version__, torchvision.__version__)'")
    assert result.rc == 0, result.stderr
    assert result.stdout.split() == ["2.9.1+cu128", "2.9.1+cu128", "0.24.1+cu128"] or \
        result.stdout.split()[1].startswith("2.9.1"), result.stdout


def test_dlbox_check_runs_the_guides_steps_on_the_cpu(host):
    result = host.run(ENV + "/bin/dlbox-check --json")
    assert result.rc == 0, result.stdout + result.stderr
    torch = json.loads(result.stdout)["frameworks"][0]
    assert torch["torchaudio"].startswith("2.9.1")
    steps = {(s["name"], s["device"]): s for s in torch["steps"]}
    assert sorted(steps) == [("autocast", "cpu"), ("checkpoint", "cpu"), ("compile", "cpu"), ("conv", "cpu"),
                             ("dataloader", "cpu")]
    assert all(s["ok"] for s in steps.values()), steps
    print("dlbox-check steps: " + ", ".join("%s %.2f s" % (n, s["seconds"]) for (n, _d), s in sorted(steps.items())))


def test_size_of_the_environment_and_pips_time(host):
    size = host.run("du -sm --dereference-args " + ENV).stdout.split()[0]
    log = host.file(ENV + "/dlbox/pip.log").content_string.splitlines()
    stamps = [datetime.datetime.strptime(line[:19], "%Y-%m-%dT%H:%M:%S") for line in log if line[:2] == "20"]
    saved = [line for line in log if " Saved ./wheels/" in line]
    print("python_env_torchaudio: %s MB installed, %d wheels downloaded; pip's download and install took %d s"
          % (size, len(saved), (stamps[-1] - stamps[0]).total_seconds()))
    assert int(size) > 1000
