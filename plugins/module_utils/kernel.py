# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel release helpers (pure, Python 3.8+): which headers meta package follows a kernel flavour."""

from __future__ import annotations

import re

# Distribution -> architecture -> the headers meta package of the distribution's default kernel.
DEFAULT_HEADERS_META = {
    "debian": {"x86_64": "linux-headers-amd64", "aarch64": "linux-headers-arm64"},
    "ubuntu": {"x86_64": "linux-headers-generic", "aarch64": "linux-headers-generic"},
}

# <upstream version>-<ABI number>-<flavour>: 6.1.0-18-cloud-amd64, 5.15.0-1050-aws, 6.8.0-45-generic
_RELEASE = re.compile(r"^\d+\.\d+(?:\.\d+)?-\d+(?:\.\d+)?-(?P<flavour>[a-z0-9][a-z0-9-]*)$")


def kernel_flavour(release):
    """The flavour of a distribution kernel release ("cloud-amd64", "aws"), or None for other kernels."""
    match = _RELEASE.match((release or "").strip())
    return match.group("flavour") if match else None


def headers_meta_candidates(release, distribution, architecture):
    """Headers meta packages to try, best first: the running kernel's flavour, then the default kernel's.

    A custom or foreign kernel (no distribution flavour) gets only the distribution default; an
    unknown distribution or architecture gets only the flavour package, if any.
    """
    out = []
    flavour = kernel_flavour(release)
    if flavour:
        out.append("linux-headers-%s" % flavour)
    default = DEFAULT_HEADERS_META.get((distribution or "").lower(), {}).get(architecture or "")
    if default and default not in out:
        out.append(default)
    return out
