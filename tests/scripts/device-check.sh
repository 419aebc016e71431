#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# What only a real GPU host can show, in one short run (no network needed):
#   gpu_facts and the plan on the real host, the captures a fixture could later be made of
#   (nvidia-smi -q -x, --query-gpu CSV, topo -m, lspci), python_env's dlbox-check on the host's
#   Python/PyTorch, the doctor (playbooks/doctor.yml) and a dlbox-collect tarball, the fitness report and the
#   acceptance figures against data/acceptance.yml (preflight.yml, acceptance.yml), the cuda role's
#   compile-and-run check and the nccl role's decisions when their
#   scripts exist. Nothing is installed on the host; the driver is never touched.
# Usage (repository root): OUT=/some/dir bash tests/scripts/device-check.sh
#   Wheels for ansible-core and its missing needs may be put in .whl/ (see the device README).
set -u
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
root=$(pwd)
SECONDS=0
step() { printf '\n===== %s (at %d s) =====\n' "$1" "$SECONDS"; }

if [ -z "${DLBOX_NO_WHEELS:-}" ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
mkdir -p build/collections/ansible_collections/dlbox
ln -sfn ../../../.. build/collections/ansible_collections/dlbox/stack
export ANSIBLE_COLLECTIONS_PATH=$root/build/collections ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_NOCOLOR=1

step "host"
uname -a; head -3 /etc/os-release; python3 --version; ansible --version | head -1
nvidia-smi || true

step "captures (saved under \$OUT)"
nvidia-smi -q -x > "$OUT/nvidia-smi-q-x.xml" 2>&1 || true
nvidia-smi --query-gpu=index,name,pci.bus_id,pci.device_id,driver_version,compute_cap,memory.total,ecc.mode.current,persistence_mode \
  --format=csv > "$OUT/nvidia-smi-query-gpu.csv" 2>&1 || true
nvidia-smi topo -m > "$OUT/nvidia-smi-topo-m.txt" 2>&1 || true
if command -v lspci >/dev/null; then (lspci -nn; echo; lspci -vvv) > "$OUT/lspci.txt" 2>&1; else echo "lspci: not available"; fi
cat "$OUT/nvidia-smi-query-gpu.csv" "$OUT/nvidia-smi-topo-m.txt"

step "gpu_facts on this host"
ansible localhost -c local -m dlbox.stack.gpu_facts 2>&1 | head -150

step "plan for this host (plan.yml, detection on)"
ansible-playbook -i localhost, -c local -e ansible_python_interpreter="$(command -v python3)" \
  -e dlbox_plan_output="$OUT/plan.json" playbooks/plan.yml 2>&1 | tail -60

step "plan from this host's captured nvidia-smi -q -x"
ansible-playbook -i localhost, -c local -e ansible_python_interpreter="$(command -v python3)" \
  -e "{\"dlbox_plan_hardware\": {\"captures\": [\"$OUT/nvidia-smi-q-x.xml\"], \"os\": \"ubuntu-24.04\"}}" \
  -e dlbox_plan_output="$OUT/plan-from-capture.json" playbooks/plan.yml 2>&1 | tail -25

step "doctor on this host (playbooks/doctor.yml, live; report under \$OUT/reports/doctor)"
ansible-playbook -i localhost, -c local -e ansible_python_interpreter="$(command -v python3)" \
  -e dlbox_report_dir="$OUT/reports" playbooks/doctor.yml 2>&1 | tail -60
sh playbooks/files/dlbox-collect -o "$OUT/dlbox-collect-device.tar.gz"

step "python_env's dlbox-check with the host's PyTorch"
python3 roles/python_env/files/dlbox-check.py --require-gpu; echo "rc=$?"
python3 roles/python_env/files/dlbox-check.py --json --require-gpu > "$OUT/dlbox-check.json"; echo "rc=$?"
# its steps (torch.compile on CPU and GPU, autocast bf16/fp16+GradScaler, DataLoader workers + pin_memory,
# checkpoint; TensorFlow XLA), each timed; a failed one with its cause (e.g. no Python headers on this host)
python3 -c 'import json,sys; [print(f["framework"], s["name"], s["device"], "ok" if s["ok"] else "FAILED", s["seconds"], "s", s["detail"] or s["cause"]) for f in json.load(open(sys.argv[1]))["frameworks"] for s in f.get("steps") or []]' "$OUT/dlbox-check.json"

step "fitness report and acceptance (preflight.yml, acceptance.yml; fleet report under \$OUT/reports)"
ansible-playbook -i localhost, -c local -e ansible_python_interpreter="$(command -v python3)" \
  -e dlbox_report_dir="$OUT/reports" playbooks/preflight.yml 2>&1 | tail -40
timeout 400 ansible-playbook -i localhost, -c local -e ansible_python_interpreter="$(command -v python3)" -e ansible_become=false \
  -e dlbox_report_dir="$OUT/reports" -e dlbox_acceptance_python="$(command -v python3)" -e dlbox_acceptance_fail=false \
  playbooks/acceptance.yml 2>&1 | tail -60

step "GPU settings and MIG decisions on this host (read-only: queries only, no setting is changed)"
# dlbox.stack.gpu_settings' limits and the MIG checks, run on this GPU's own nvidia-smi -q -x; nothing is applied.
nvidia-smi -q -d POWER,CLOCK,SUPPORTED_CLOCKS > "$OUT/nvidia-smi-q-power-clock.txt" 2>&1 || true
nvidia-smi mig -lgip > "$OUT/nvidia-smi-mig-lgip.txt" 2>&1; echo "mig -lgip rc=$? (lists profiles only where MIG mode is on)"
PYTHONPATH="$root/build/collections${PYTHONPATH:+:$PYTHONPATH}" python3 - "$OUT/nvidia-smi-q-x.xml" <<'PY'
import sys
from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_settings as gs
text = open(sys.argv[1], encoding="utf-8").read()
for gpu in gs.parse_smi(text):
    print(gpu["index"], gpu["name"], "power", gpu["power"], "max clocks", gpu["max_clocks"],
          "ecc", gpu["ecc"], "mig", gpu["mig"], "compute", gpu["compute_mode"], "processes", gpu["processes"])
    high, low = gpu["power"]["max"], gpu["power"]["min"]
    for watts in (high, high + 1, low - 1):
        out = gs.plan(text, {"gpu_settings_per_gpu": {gpu["index"]: {"power_limit_w": watts}}})
        print("  power %s W ->" % watts, "ok" if out["ok"] else out["problems"], out["commands_now"])
    known = gs.mig_profiles(gpu["name"])
    print("  MIG:", known["name"] if known else "not supported", sorted((known or {}).get("profiles", {})))
    if known:
        whole = max(known["profiles"], key=lambda p: known["profiles"][p]["compute"])
        layout = {"version": "v1", "mig-configs": {"whole": [{"devices": [gpu["index"]], "mig-enabled": True,
                                                               "mig-devices": {whole: 1}}],
                                                   "too-many": [{"devices": [gpu["index"]], "mig-enabled": True,
                                                                  "mig-devices": {whole: 2}}]}}
        for name in ("whole", "too-many"):
            print("  layout %s:" % name, gs.mig_problems(layout, name, text) or "ok")
PY

for s in gpu-cuda-check.sh gpu-nccl-check.sh; do
  if [ -f "tests/scripts/$s" ]; then
    step "$s"
    OUT=$(mktemp -d) timeout 240 bash "tests/scripts/$s"; echo "rc=$?"
  fi
done
step "done"
