# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The infiniband role's module (filter ``dlbox.stack.role_module``; issue 47).

- ``options(given)``: the role's variables, defaults from its argument specs (typed).
- ``decide(plan, options, facts)``: ``facts`` = {"arch": ``ansible_facts['architecture']`` (empty: not checked)} ->
  DOCA-OFED's optional install, checked (:func:`infiniband.doca_install`): {"install", "problems", "url", "key_url",
  "fingerprint", "packages"}; every problem names the variable. The ports' report is not a decision: it reads
  ``ibstat`` (filter ``dlbox.stack.infiniband_report``).
- ``needs(decision)``: {"apt": the DOCA packages, "repositories": the DOCA-Host repository, "keys": [{url,
  fingerprint}]}, empty without the install.

The deprecated filter ``dlbox.stack.infiniband_doca`` reaches the same :func:`infiniband.doca_install`.
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_settings, infiniband
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

ROLE = "infiniband"


def options(given=None):
    return _spec.typed(ROLE, given)


def decide(plan, options, facts, data=None):  # pylint: disable=unused-argument,redefined-outer-name
    """The plan is not read: DOCA-OFED follows the variables and the host's architecture."""
    return infiniband.doca_install(data or gpu_settings.load_data(), options["infiniband_doca_install"],
                                   options["infiniband_doca_repo_url"], options["infiniband_doca_key_url"],
                                   options["infiniband_doca_key_fingerprint"], options["infiniband_doca_packages"],
                                   str(facts.get("arch") or ""))


def needs(decision):
    """Nothing without the install or with a problem."""
    if not decision["install"] or decision["problems"]:
        return {"apt": [], "repositories": [], "keys": []}
    return {"apt": list(decision["packages"]), "repositories": [decision["url"]],
            "keys": [{"url": decision["key_url"], "fingerprint": decision["fingerprint"]}]}
