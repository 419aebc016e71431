"""A stalled mirror or cache never freezes a rollout (issue 50, item 7): the fleet's apt-cacher-ng and the test suite's
share one download per index (freeze detection off), and the common role bounds every apt download before its first
one (apt's own configuration, parsed here by apt-config where the machine has it) and the whole refresh."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import jinja2
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import package_cache_plan as pcp

ROOT = Path(__file__).resolve().parents[2]
COMMON = ROOT / "roles" / "common" / "tasks"


def _tasks(path):
    return {task["name"]: task for task in yaml.safe_load(path.read_text())}


def test_the_test_cache_turns_freeze_detection_off_as_the_role_does():
    """tests/scripts/test-cache.sh runs the same apt-cacher-ng as the package_cache role: the hang of issue 50 item 7
    ('Failure to move file ... out of the way ... errno: File exists', 6 hosts in one batch) came from its cache."""
    script = (ROOT / "tests" / "scripts" / "test-cache.sh").read_text()
    assert re.findall(r"\bResponseFreezeDetectTime=(\d+)", script) == [str(pcp.ACNG_FREEZE_DETECT_OFF)]
    assert pcp.ACNG_FREEZE_DETECT_OFF == 2 ** 31 - 1                   # the largest value of the option's int


def _apt_config(conf):
    """{option: value} of an apt configuration file, as apt reads it (apt-config), else by its syntax."""
    if shutil.which("apt-config"):
        proc = subprocess.run(["apt-config", "-c", str(conf), "dump"], capture_output=True, text=True, check=True)
        return dict(re.findall(r'^(\S+) "(.*)";$', proc.stdout, flags=re.M))
    return dict(re.findall(r'^(\S+) "(.*)";$', conf.read_text(), flags=re.M))


def test_common_bounds_every_apt_download_before_its_first(tmp_path):
    task = _tasks(COMMON / "proxy.yml")["Bound every apt download (common_apt_timeout, common_apt_retries)"]
    copy = task["ansible.builtin.copy"]
    assert copy["dest"].startswith("/etc/apt/apt.conf.d/") and copy["mode"] == "0644"
    conf = tmp_path / Path(copy["dest"]).name
    conf.write_text(jinja2.Environment().from_string(copy["content"]).render(common_apt_timeout=45, common_apt_retries=2))
    options = _apt_config(conf)
    assert (options.get("Acquire::http::Timeout"), options.get("Acquire::https::Timeout"),
            options.get("Acquire::Retries")) == ("45", "45", "2"), options
    # written before the role's first download (packages.yml: the refresh, then the installs)
    order = [t.get("ansible.builtin.import_tasks") for t in yaml.safe_load((COMMON / "main.yml").read_text())]
    assert order.index("proxy.yml") < order.index("packages.yml")


def test_the_refresh_has_a_bound_of_its_own():
    """apt's timeouts never fire on a connection its cache closed (CLOSE_WAIT): the refresh has a task timeout."""
    refresh = _tasks(COMMON / "packages.yml")["Refresh the apt package cache"]
    assert refresh["timeout"] == "{{ common_apt_update_timeout | int }}"
    assert refresh["ansible.builtin.apt"]["update_cache_retries"] == 2
