"""playbooks/offline.yml over the local connection, real ansible-playbook in check mode (nothing changed here): a host
without offline mode skips its one include of tasks/offline_install.yml, not each of that file's ~25 tasks (each a
worker process per host on the controller, skipped: issue 50, the fleet's controller CPU), and no empty play prints
"skipping: no hosts matched" (31aea3f: the README quickstart test asserts no "skipping:" line reaches the user); a host
with dlbox_offline: true still runs the whole of it, up to the refusal that lists what its folder lacks (an empty
folder here). The plan comes from plan.yml (a FIXTURE RTX 4090 on Debian 12 on paper, dlbox_plan_hardware)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error

INSTALL = ROOT / "playbooks" / "tasks" / "offline_install.yml"


def test_only_the_offline_host_runs_the_offline_tasks_and_no_empty_play_is_printed(tmp_path):
    (tmp_path / "mirror").mkdir()
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "dlbox_report_dir": str(tmp_path / "reports"),
                 "dlbox_plan_hardware": {"gpus": ["RTX 4090"], "os": "debian-12"}},
        "hosts": {"on": {"dlbox_offline": True, "dlbox_offline_dir": str(tmp_path / "mirror")}, "off": {}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(json.dumps([
        {"ansible.builtin.import_playbook": str(ROOT / "playbooks" / "plan.yml")},
        {"ansible.builtin.import_playbook": str(ROOT / "playbooks" / "offline.yml")}]))
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base,
           "LC_ALL": "C.UTF-8"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           "--check"], capture_output=True, text=True, check=False, env=env, timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-4000:]                            # the offline host's refusal
    offline = out.split("PLAY [Offline mode (dlbox_offline)]", 1)[1]
    # (plan.yml's detection play has no host here: dlbox_plan_hardware skips it; the quickstart's detection runs)
    assert "PLAY [" not in offline.split("PLAY RECAP")[0] and "no hosts matched" not in offline, offline
    # the host without offline mode: the variables' check, leaving offline mode, and the one include skipped
    assert re.findall(r"^\w+: \[off\]", offline, flags=re.M) == ["ok: [off]", "ok: [off]", "skipping: [off]"], offline
    assert "included: %s for on\n" % INSTALL in offline, offline
    # the offline host ran the included tasks, up to the refusal naming what the (empty) folder lacks
    for task in ("Read the host's release", "List the packages on the host", "List the mirror folder (on the controller)",
                 "Decide what is missing"):
        head = "TASK [%s]" % task
        assert head in offline and "ok: [on" in offline.split(head, 1)[1].split("TASK [", 1)[0], (task, offline)
    refusal = offline.split("TASK [Refuse a run that would need the internet (every missing artifact)]", 1)[1]
    assert "artifact(s) missing from %s" % (tmp_path / "mirror") in refusal, refusal[:3000]
    assert "manifest.json is missing" in refusal
    recap = out.split("PLAY RECAP")[-1]
    assert re.search(r"^on +: .*failed=1", recap, flags=re.M) and re.search(r"^off +: .*failed=0", recap, flags=re.M)
