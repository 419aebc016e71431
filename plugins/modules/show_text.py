#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: show_text
short_description: Print text lines as they are, whatever the callback's result format
version_added: "0.1.0"
description:
  - Prints O(text) on the controller line by line, unquoted. M(ansible.builtin.debug) prints a string
    JSON-quoted (newlines as C(\n)) under Ansible's default settings (C(callback_result_format=json)); the plans,
    summaries and fleet tables of this collection are meant to be read as text from any project and any C(ansible.cfg).
  - Runs on the controller only (an action plugin); changes nothing.
author:
  - dlbox.stack developers (@dlbox)
options:
  text:
    description:
      - The text, as one string (split at its newlines) or a list of lines.
    type: raw
    required: true
attributes:
  check_mode:
    support: full
    description: Prints the same in check mode; it never changes anything.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
"""

EXAMPLES = r"""
- name: Show the plan as text
  dlbox.stack.show_text:
    text: "{{ __dlbox_plans.text }}"
"""

RETURN = r"""
lines:
  description: The lines printed.
  returned: success
  type: list
  elements: str
  sample: ["Plan for gpu-ws-01:", "  driver: 580"]
"""
