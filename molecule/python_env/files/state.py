# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Collect the state the testinfra tests read, in one run inside the container (each remote call costs seconds)."""

import glob
import json
import os
import subprocess

ROOT = "/opt/dlbox/envs"


def run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


state = {"links": {n: os.readlink(os.path.join(ROOT, n)) for n in ("torch", "tools")}, "versions": {}, "system": {}}
for path in sorted(glob.glob(ROOT + "/.versions/*")):
    pip_list = run([path + "/bin/python", "-m", "pip", "list", "--format=json"])
    entry = {"pip_list": json.loads(pip_list["stdout"] or "[]")}
    for name in ("manifest.json", "requirements.lock", "pip.log"):
        try:
            with open(os.path.join(path, "dlbox", name), encoding="utf-8") as handle:
                entry[name] = handle.read()
            entry[name + ".mtime"] = os.stat(os.path.join(path, "dlbox", name)).st_mtime
        except OSError:
            entry[name] = None
    check = os.path.join(path, "bin", "dlbox-check")
    entry["check_mode"] = oct(os.stat(check).st_mode & 0o777) if os.path.exists(check) else None
    with open(check, encoding="utf-8") as handle:
        entry["check_shebang"] = handle.readline().strip()
    state["versions"][os.path.basename(path)] = entry
env = ROOT + "/torch/bin/"
state["import"] = run([env + "python", "-c", "import torch; print(torch.__version__)"])
state["check_json"] = run([env + "dlbox-check", "--json"])
state["check_require_gpu"] = run([env + "dlbox-check", "--require-gpu", "--no-matmul", "--no-steps"])
tools = os.path.realpath(ROOT + "/tools")
state["tools_dirs"] = {p: oct(os.stat(p).st_mode & 0o7777) for p in (tools, tools + "/bin", tools + "/lib")}
state["tools_group"] = run(["stat", "-c", "%G", tools])["stdout"].strip()
state["system"]["import_torch"] = run(["python3", "-c", "import torch"])["rc"]
state["system"]["import_six"] = run(["python3", "-c", "import six"])["rc"]
state["system"]["externally_managed"] = os.path.exists("/usr/lib/python3.11/EXTERNALLY-MANAGED")
print(json.dumps(state))
