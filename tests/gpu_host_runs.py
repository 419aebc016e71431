# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Molecule scenarios on the FIXTURE GPU host (tests/fixtures/gpu_host) read back: each run's record
(run-N.json, run-N.log and summary-N.json in Molecule's ephemeral folder, written by the scenario's run tasks) and the
model's boot lines. Shared by molecule/gpu_host, nvidia_driver_signed and nvidia_driver_default_debian."""

import json
import os
import re


def read_record(name):
    """A file the scenario kept in Molecule's ephemeral folder."""
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], name), encoding="utf-8") as handle:
        return handle.read()


def run(n, host):
    """Run N of the scenario on the host named `host`: (meta, log, recap counts, summary or {} when it wrote none)."""
    meta = json.loads(read_record("run-%s.json" % n))
    log = re.sub(r"\x1b\[[0-9;]*m", "", read_record("run-%s.log" % n))  # Molecule's runs may force colour
    recap = re.search(r"^%s\s*:\s*(.*)$" % re.escape(host), log, re.M)
    assert recap, "run %s: no recap line for %s in its log:\n%s" % (n, host, log[-3000:])
    counts = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", recap.group(1)))
    summary_file = "summary-%s.json" % n
    summary = json.loads(read_record(summary_file)) \
        if os.path.exists(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], summary_file)) else {}
    print("run %s: %.1f s wall, recap %s" % (n, meta["seconds"], recap.group(1).strip()))
    return meta, log, counts, summary


def boots(host):
    """The model's boot lines: (kernel, nouveau, loaded version or '', why none loaded)."""
    lines = host.file("/opt/dlbox-fixture-gpu/state/events.log").content_string.splitlines()
    return [re.match(r"boot \S+ kernel (\S+) nouveau (\S+) loaded (\S*)(?: \((.*)\))?$", line).groups()
            for line in lines if line.startswith("boot ")]
