#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: report_file
short_description: Write a report file on the controller, in the controller's own process
version_added: "0.1.0"
description:
  - Writes O(content) to O(dest) on the controller when the file's content or mode differs, through a temporary file
    in the same folder renamed over it; makes the folders it needs (mode 0755).
  - For the reports this collection keeps on the controller (the fleet summary, the stack summary). Unlike
    M(ansible.builtin.copy) delegated to C(localhost), it starts no Python interpreter for a file (two per file per run
    for copy, its stat and its copy).
  - Runs on the controller only (an action plugin). A file that cannot be written fails the task with the reason in
    C(msg), and its result has no C(dest).
author:
  - dlbox.stack developers (@dlbox)
options:
  dest:
    description:
      - The file on the controller; a relative path is taken from the controller's working folder (where
        C(ansible-playbook) runs), C(~) expanded.
    type: path
    required: true
  content:
    description:
      - The file's whole content.
    type: str
    required: true
  mode:
    description:
      - The file's mode, as an octal string.
    type: raw
    default: "0644"
attributes:
  check_mode:
    support: full
    description: Says whether the file would change and writes nothing.
  diff_mode:
    support: none
    description: Reports are not diffed.
"""

EXAMPLES = r"""
- name: Write the fleet summary as Markdown
  dlbox.stack.report_file:
    dest: "{{ dlbox_report_dir }}/rollout/summary.md"
    content: "{{ summary.markdown }}"
"""

RETURN = r"""
dest:
  description: The file, when it now has the content given (absent when it could not be written, or in check mode when
    it would change).
  returned: when the file has the content
  type: str
  sample: /home/ops/.dlbox/reports/rollout/summary.json
msg:
  description: What was done (C(written), C(unchanged), C(mode set), C(would be written (check mode))), or why the file
    was not written.
  returned: always
  type: str
  sample: unchanged
"""
