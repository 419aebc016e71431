# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_container_toolkit role. vendor() -> NVIDIA's libnvidia-container repository from
data/repositories.yml: {"url", "key_path" (gpgkey), "fingerprint"} (also the key the nvidia-docker2
era's sources trusted, which the migration deletes from /etc/apt/trusted.gpg)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _vendor


def vendor():
    repo = _vendor.repository("container_toolkit")
    return {"url": repo["url"], "key_path": repo["key_path"], "fingerprint": repo["fingerprint"]}
