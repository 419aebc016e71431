#!/usr/bin/env bash
# Where a test run's CPU goes, by command: the kernel's process accounting (acct(5), Debian's `acct` package) records
# every process that ends, test containers' included (their processes are the host kernel's), with its CPU time.
#   tests/scripts/cpu-profile.sh COMMAND [ARG ...]    run COMMAND with accounting on, then print the table
#   tests/scripts/cpu-profile.sh --report FILE         the table of an accounting file written earlier
# Root only (accton). Processes still running at the end (a daemon, dockerd) are not counted. Names are the
# kernel's (15 characters): python3.11/python3.10/python3.12 are the test containers' Python (Ansible's modules
# there), python the controller venv's Python run as `python` (modules on localhost, testinfra), ansible-playboo
# the controller (a trailing * marks forked workers).
set -euo pipefail

report() {
  local file=$1
  sa -a "$file" 2>/dev/null | awk '
    NR == 1 { next }                                    # the total line
    { n = $1; cpu = 60 * ($3 + 0); cmd = (NF >= 6 ? $NF : "(unnamed)"); total += cpu        # sa prints CPU minutes
      group = "other"
      if (cmd ~ /^python3\.[0-9]+\*?$/ || cmd == "python3") group = "python3.x: mostly the test containers (Ansible modules)"
      else if (cmd ~ /^ansible-playboo/) group = "controller: ansible-playbook (main and workers)"
      else if (cmd ~ /^python\*?$/ || cmd ~ /^pytest/ || cmd ~ /^molecule/) group = "controller: venv python (local modules, testinfra, molecule)"
      else if (cmd ~ /^(apt|apt-get|apt-mark|apt-cache|apt-config|dpkg|dpkg-deb|dpkg-split|dpkg-query|dpkg-trigger|store|http|https|gpgv|sqv)\*?$/) group = "apt and dpkg"
      else if (cmd ~ /^(cc1|cc1plus|as|ld|collect2|gcc|g\+\+|make)\*?$/) group = "compilers"
      else if (cmd ~ /^(docker|dockerd|containerd|containerd-shim|runc|exe)\*?/) group = "docker"
      else if (cmd ~ /^(pip|pip3)\*?$/) group = "pip"
      by[group] += cpu; cmds[cmd] += cpu; runs[cmd] += n }
    END {
      printf "%9s %6s  %s\n", "CPU-s", "share", "group"
      for (g in by) printf "%9.0f %5.1f%%  %s\n", by[g], (total > 0 ? 100 * by[g] / total : 0), g | "sort -rn"
      close("sort -rn")
      printf "%9.0f %6s  %s\n\n%-20s %9s %8s %9s\n", total, "", "total", "command", "CPU-s", "runs", "s/run"
      for (c in cmds) if (cmds[c] >= 1) printf "%-20s %9.1f %8d %9.3f\n", c, cmds[c], runs[c], cmds[c] / runs[c] | "sort -k2 -rn | head -30"
    }'
}

[ $# -gt 0 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
if ! command -v sa >/dev/null || ! command -v accton >/dev/null; then
  echo "cpu-profile.sh: sa and accton are missing (apt-get install acct)" >&2; exit 2
fi
if [ "$1" = --report ]; then
  [ -s "${2:-}" ] || { echo "cpu-profile.sh: --report needs an accounting file (not '${2:-}')" >&2; exit 2; }
  report "$2"
  exit 0
fi
file=${DLBOX_PACCT:-$(mktemp /tmp/dlbox-pacct.XXXXXX)}
: > "$file"
accton "$file" >/dev/null
trap 'accton off >/dev/null 2>&1 || true' EXIT
rc=0
"$@" || rc=$?
accton off >/dev/null
trap - EXIT
echo "cpu-profile.sh: $* exited $rc; accounting file $file"
report "$file"
exit "$rc"
