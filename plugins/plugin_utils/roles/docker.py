# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The docker role. vendor() -> Docker's apt repository from data/repositories.yml: {"url" (the root; the
role adds /linux/<distribution>), "key_path" (gpg, beside the repository), "fingerprint"}."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _vendor


def vendor():
    repo = _vendor.repository("docker")
    return {"url": repo["url"], "key_path": repo["key_path"], "fingerprint": repo["fingerprint"]}
