# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.common_ini_option``, ``dlbox.stack.site_network_problems`` and
``dlbox.stack.apt_lists_fresh``."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

apt_state = LazyModule("plugin_utils.apt_state")
ini_text = LazyModule("plugin_utils.ini_text")
site_network = LazyModule("plugin_utils.site_network")


def common_ini_option(text, section, option, value=None, state="present"):
    """The INI ``text`` with ``option`` set to ``value`` in ``[section]`` (``state=absent``: removed)."""
    if text is not None and not isinstance(text, str):
        raise AnsibleFilterError("common_ini_option: expected the file's text, not %s" % type(text).__name__)
    if state == "present":
        if value is None:
            raise AnsibleFilterError("common_ini_option: state=present needs a value")
        return ini_text.set_option(text or "", section, option, value)
    if state == "absent":
        return ini_text.remove_option(text or "", section, option, value)
    raise AnsibleFilterError("common_ini_option: state must be present or absent, not %r" % (state,))


def site_network_problems(proxy, mirrors=None):
    """Sentences naming each mistake in ``dlbox_site_proxy`` and ``dlbox_site_mirrors``; empty when both are fine."""
    return site_network.problems(proxy, mirrors)


def apt_lists_fresh(find_result, valid_time, now):
    """``{fresh, lists, age}`` of apt's package lists from ``ansible.builtin.find``'s result (apt_state.lists_age)."""
    if not isinstance(find_result, dict):
        raise AnsibleFilterError("apt_lists_fresh: expected ansible.builtin.find's registered result, not %s" % type(find_result).__name__)
    return apt_state.lists_age(find_result.get("files") or [], valid_time, now)


class FilterModule(object):
    """dlbox.stack common filters."""

    def filters(self):
        return {"common_ini_option": common_ini_option, "site_network_problems": site_network_problems,
                "apt_lists_fresh": apt_lists_fresh}
