#!/usr/bin/env bash
# The nccl role's decisions on a real GPU host, without Ansible or the network:
#   bash tests/scripts/gpu-nccl-check.sh          (repository root; OUT=<dir> keeps the raw outputs)
# Reads the host like dlbox.stack.nccl_facts does (nvidia-smi topo -m / -p2p rw / --query-gpu, lspci -vvv,
# ip -o link, ibdev2netdev or /sys/class/infiniband), builds and runs the role's P2P probe
# (roles/nccl/files/nccl-p2p-probe.cu) with the host's nvcc, then runs plugins/module_utils/_nccl.py on
# those outputs and prints the nccl.conf the role would write, with the reasons, and the NCCL versions of
# data/compat.yml that the installed CUDA, driver and GPUs would refuse. Needs python3 (PyYAML optional:
# without it the data-driven parts are skipped and said so). Exit 0 when the decision ran.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$(mktemp -d)}
raw="$OUT/nccl-raw"
mkdir -p "$raw"
SECONDS=0

capture() {  # capture NAME command...: stdout to $raw/NAME.txt when the command exists and succeeds
  local name=$1; shift
  if command -v "$1" >/dev/null 2>&1 && timeout 60 "$@" >"$raw/$name.txt" 2>"$raw/$name.err"; then
    echo "[nccl-check] $name: $* (ok)"
  else
    rm -f "$raw/$name.txt"; echo "[nccl-check] $name: $* (not available)"
  fi
}
capture topo nvidia-smi topo -m
capture p2p_matrix nvidia-smi topo -p2p rw
capture gpus nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
capture compute_cap nvidia-smi --query-gpu=compute_cap --format=csv,noheader
capture lspci lspci -vvv
capture ip_link ip -o link
if command -v ibdev2netdev >/dev/null 2>&1; then
  capture ibdev ibdev2netdev
else
  for hca in /sys/class/infiniband/*; do
    [ -d "$hca" ] || continue
    for port in "$hca"/ports/*; do
      state=$(cat "$port/state" 2>/dev/null); net=$(find "$hca/device/net" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort | head -1)
      case "$state" in *ACTIVE*) up=Up ;; *) up=Down ;; esac
      echo "$(basename "$hca") port $(basename "$port") ==> ${net:--} ($up)"
    done
  done >"$raw/ibdev.txt"
  echo "[nccl-check] ibdev: from /sys/class/infiniband ($(wc -l <"$raw/ibdev.txt") port(s))"
fi

nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -n "$nvcc" ]; then
  "$nvcc" --version >"$raw/nvcc.txt" 2>&1
  echo "[nccl-check] probe: building with $nvcc"
  if "$nvcc" -O2 -o "$raw/nccl-p2p-probe" "$root/roles/nccl/files/nccl-p2p-probe.cu" >"$raw/probe-build.txt" 2>&1; then
    timeout 120 "$raw/nccl-p2p-probe" >"$raw/probe.txt" 2>&1; echo "[nccl-check] probe: rc=$? ($(head -1 "$raw/probe.txt"))"
  else
    echo "[nccl-check] probe: nvcc could not build it:"; tail -5 "$raw/probe-build.txt"
  fi
else
  echo "[nccl-check] probe: no nvcc, not built"
fi

python3 - "$root" "$raw" <<'PY'
import os, re, sys, tempfile
root, raw = sys.argv[1], sys.argv[2]
base = tempfile.mkdtemp(prefix="dlbox-nccl-check-")
os.makedirs(os.path.join(base, "ansible_collections", "dlbox"))
os.symlink(root, os.path.join(base, "ansible_collections", "dlbox", "stack"))
sys.path.insert(0, base)
from ansible_collections.dlbox.stack.plugins.module_utils import _nccl as nccl

def read(name):
    path = os.path.join(raw, name + ".txt")
    return open(path).read() if os.path.exists(path) else None

inputs = {k: read(k) for k in ("topo", "p2p_matrix", "gpus", "lspci", "ip_link", "ibdev", "probe")}
try:
    import yaml
    data = yaml.safe_load(open(os.path.join(root, "data", "compat.yml")))
except ImportError:
    data = None
    print("[nccl-check] PyYAML missing: known driver bugs and version refusals from data/compat.yml skipped")
issues = (data or {}).get("nccl_p2p_issues") or []
decision = nccl.decide(inputs, issues=issues)
print("[nccl-check] inputs: " + ", ".join("%s=%s" % (k, "yes" if v is not None else "missing") for k, v in inputs.items()))
print("[nccl-check] GPUs in topo -m: %d; links: %s" % (len(decision["topology"]["gpus"]),
      ", ".join("%s-%s %s" % (l["pair"][0], l["pair"][1], l["kind"]) for l in decision["topology"]["links"]) or "none"))
acs = nccl.parse_acs(inputs["lspci"]) if inputs["lspci"] else None
if acs is not None:
    print("[nccl-check] lspci -vvv: %d ACSCtl line(s), %d with ACS on, %d above a GPU; NVIDIA GPUs on bus %s"
          % (len(acs["bridges"]), sum(b["enabled"] for b in acs["bridges"]), len(nccl.acs_above_gpus(acs)),
             ", ".join("%02x" % b for b in acs["gpus"]) or "-"))
if inputs["probe"]:
    print("[nccl-check] probe pairs: %s" % (nccl.parse_probe(inputs["probe"]) or "none (fewer than two GPUs)"))
print("[nccl-check] P2P verdict: %s" % decision["p2p"]["verdict"])
for reason in decision["p2p"]["reasons"]:
    print("  reason: " + reason)
for note in decision["notes"]:
    print("  note: " + note)
print("[nccl-check] peermem needed: %s" % decision["peermem"])
print("----- nccl.conf the role would write -----")
print(nccl.render_conf(decision["settings"]), end="")
print("------------------------------------------")
if data is not None:
    nvcc = read("nvcc") or ""
    match = re.search(r"release (\d+\.\d+)", nvcc)
    cuda = match.group(1) if match else ""
    gpus = nccl.parse_gpus_csv(inputs["gpus"])
    driver = gpus[0]["driver"] if gpus else None
    ccs = sorted(set(l.strip() for l in (read("compute_cap") or "").splitlines() if re.match(r"^\d+\.\d+$", l.strip())))
    print("[nccl-check] installed CUDA %s, driver %s, compute capability %s" % (cuda or "none", driver, ", ".join(ccs) or "?"))
    for entry in data.get("nccl") or []:
        why = nccl.refusals(entry["version"], cuda, data["nccl"], data["cuda"]["minor_compat"], driver_version=driver,
                            compute_capabilities=ccs, architectures=data["architectures"])
        print("  NCCL %-7s %s" % (entry["version"], "fits" if not why else "refused: " + " ".join(why)))
PY
rc=$?
echo "[nccl-check] done in ${SECONDS}s (raw outputs in $raw), rc=$rc"
exit $rc
