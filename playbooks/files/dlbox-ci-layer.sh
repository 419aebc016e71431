# shellcheck shell=sh
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# The steps examples/Dockerfile's two playbook layers (the `cuda` and `image` stages) share, once: each of their RUNs
# sources this file (the `collection` stage copies it to /opt/dlbox-collection/dlbox-ci-layer.sh, bind-mounted there
# with Ansible) and then calls dlbox_ci_playbook with its own layer's extra vars:
#
#   . /opt/dlbox-collection/dlbox-ci-layer.sh; dlbox_ci_playbook -e "{\"dlbox_ci_layer\": \"cuda\", ... $archs ...}"
#
# Sourcing it: stops at the first error (set -eu); gives pip and Python the CA bundle secret where one is mounted, and
# pip the pip_conf secret (a private index's URL) through PIP_CONFIG_FILE; sets
# Debian's docker-clean aside for the RUN (so that apt's cache mount keeps the .debs) and puts it back on exit; installs
# python3 and python3-apt where the base image lacks them (Ansible's apt module; a no-op in the frameworks layer, which
# is built on the cuda layer); sets $archs (DLBOX_CUDA_ARCHS as a JSON list) and $stack (DLBOX_STACK as a JSON string).
# dlbox_ci_playbook runs dlbox.stack.ci_image with the plan (DLBOX_PLAN, with DLBOX_FRAMEWORKS' keys added to its
# dlbox_plan_request where the stage has DLBOX_FRAMEWORKS), the site's vars file, the frameworks' vars file where the
# stage has DLBOX_FRAMEWORK_VARS_FILE, then its own arguments; Ansible's temporary files go afterwards. A stage sees
# only the build arguments it declares, so the cuda stage (no DLBOX_FRAMEWORKS, no DLBOX_FRAMEWORK_VARS_FILE) hands the
# playbook DLBOX_PLAN as given and no frameworks' vars file.
set -eu
dlbox_ci_clean=/etc/apt/apt.conf.d/docker-clean
dlbox_ci_apt_conf=/tmp/dlbox-ci-apt.conf
# What the RUN set aside or wrote goes back or away when it ends, so nothing of it is in the layer.
dlbox_ci_end() {
  if [ -f /tmp/docker-clean ]; then mv /tmp/docker-clean "$dlbox_ci_clean"; fi
  rm -f "$dlbox_ci_apt_conf"
}
trap dlbox_ci_end EXIT
if [ -s /run/secrets/ca_bundle ]; then
  export PIP_CERT=/run/secrets/ca_bundle SSL_CERT_FILE=/run/secrets/ca_bundle REQUESTS_CA_BUNDLE=/run/secrets/ca_bundle
  # apt reads none of those: its https method takes Acquire::https::CAInfo (apt-transport-https(1)), so an https
  # repository (NVIDIA's) behind a TLS-inspecting proxy needs it too. A file named by APT_CONFIG adds it for this RUN
  # only (apt.conf(5): read first, then apt.conf.d; python3-apt's init_config, which Ansible's apt module uses, reads
  # it the same way); the image's apt configuration is not touched.
  printf 'Acquire::https::CAInfo "/run/secrets/ca_bundle";\n' > "$dlbox_ci_apt_conf"
  export APT_CONFIG="$dlbox_ci_apt_conf"
fi
# A private index's URL (it may carry a token) comes as the pip_conf secret, a pip configuration file, never as a build
# argument (whose value the image's history records): pip reads it through PIP_CONFIG_FILE, for this RUN only.
if [ -s /run/secrets/pip_conf ]; then
  export PIP_CONFIG_FILE=/run/secrets/pip_conf
fi
if [ -f "$dlbox_ci_clean" ]; then
  mv "$dlbox_ci_clean" /tmp/docker-clean
fi
if ! command -v python3 >/dev/null || ! python3 -c 'import apt_pkg' 2>/dev/null; then
  apt-get update && apt-get install -y --no-install-recommends python3 python3-apt ca-certificates
fi
# (archs and stack are read by the RUN that sources this file, in its own layer's extra vars)
# shellcheck disable=SC2034
archs=$(printf '%s' "${DLBOX_CUDA_ARCHS:-}" | python3 -c 'import json, sys; print(json.dumps([a for a in sys.stdin.read().split(";") if a]))')
# shellcheck disable=SC2034
stack=$(printf '%s' "${DLBOX_STACK:-}" | python3 -c 'import json, sys; print(json.dumps(sys.stdin.read()))')

dlbox_ci_playbook() {
  if [ -n "${DLBOX_FRAMEWORKS+set}" ]; then
    dlbox_ci_plan=$(DLBOX_PLAN="$DLBOX_PLAN" DLBOX_FRAMEWORKS="$DLBOX_FRAMEWORKS" python3 -c 'import json, os
plan = json.loads(os.environ["DLBOX_PLAN"]); fw = json.loads(os.environ["DLBOX_FRAMEWORKS"] or "{}")
plan["dlbox_plan_request"] = dict(plan.get("dlbox_plan_request") or {}, **fw); print(json.dumps(plan))')
  else
    dlbox_ci_plan=$DLBOX_PLAN
  fi
  if [ -n "${DLBOX_FRAMEWORK_VARS_FILE:-}" ]; then
    set -- -e "@/srv/dlbox-context/$DLBOX_FRAMEWORK_VARS_FILE" "$@"
  fi
  ANSIBLE_COLLECTIONS_PATH=/opt/dlbox-collection/collections ANSIBLE_INJECT_FACT_VARS=false ANSIBLE_NOCOLOR=1 \
  ANSIBLE_LOCAL_TEMP=/tmp/dlbox-ansible ANSIBLE_HOME=/tmp/dlbox-ansible DLBOX_STACK_CACHE_DIR=/tmp/dlbox-ansible/data-cache \
    /opt/dlbox-ansible/bin/ansible-playbook -c local -i localhost, -e ansible_python_interpreter=/usr/bin/python3 \
    dlbox.stack.ci_image -e "$dlbox_ci_plan" -e @/opt/dlbox-collection/site-vars.yml "$@"
  rm -rf /tmp/dlbox-ansible /root/.ansible
}
