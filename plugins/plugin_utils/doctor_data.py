# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load ``data/doctor.yml`` (the vendor facts the doctor judges by) and check its whole shape (controller only)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "data" / "doctor.yml"
_SEVERITIES = ("error", "warning", "info")


class DoctorDataError(ValueError):
    """data/doctor.yml is missing, unreadable or not in the expected shape."""


def _need(condition, where, what):
    if not condition:
        raise DoctorDataError("data/doctor.yml: %s: %s" % (where, what))


def _source(entry, where):
    _need(isinstance(entry.get("source"), str) and entry["source"].strip(), where, "needs a 'source' (text)")


def check_doctor_data(data):
    """Raise DoctorDataError naming the entry and key at fault; return ``data`` when it is well formed."""
    _need(isinstance(data, dict), "top level", "must be a mapping")
    _need(isinstance(data.get("date"), str) and re.match(r"^\d{4}-\d{2}-\d{2}$", data["date"]), "date",
          "must be a quoted date like \"2026-12-01\"")
    xid = data.get("xid")
    _need(isinstance(xid, dict), "xid", "must be a mapping with 'source' and 'codes'")
    _source(xid, "xid")
    _need(isinstance(xid.get("codes"), list) and xid["codes"], "xid.codes", "must be a non-empty list")
    actions = xid.get("actions")
    _need(isinstance(actions, dict) and actions and all(isinstance(v, str) and v.strip() for v in actions.values()),
          "xid.actions", "must map each resolution bucket of the catalog to a text")
    seen = set()
    for index, entry in enumerate(xid["codes"]):
        where = "xid.codes[%d]" % index
        _need(isinstance(entry, dict), where, "must be a mapping {code, mnemonic, meaning, severity, action, investigate}")
        _need(isinstance(entry.get("code"), int) and not isinstance(entry.get("code"), bool) and entry["code"] > 0,
              where, "'code' must be a positive integer")
        _need(entry["code"] not in seen, where, "code %s is listed twice" % entry["code"])
        seen.add(entry["code"])
        for key in ("mnemonic", "meaning", "investigate"):
            _need(isinstance(entry.get(key), str) and entry[key].strip(), where, "'%s' must be text" % key)
        _need(entry.get("severity") in _SEVERITIES, where, "'severity' must be one of %s" % ", ".join(_SEVERITIES))
        _need(entry.get("action") in actions, where, "'action' must be one of xid.actions (%s)" % entry.get("action"))
        _need(entry.get("note") is None or isinstance(entry["note"], str) and entry["note"].strip(), where,
              "'note' must be text")
        unknown = set(entry) - {"code", "mnemonic", "meaning", "severity", "action", "investigate", "note"}
        _need(not unknown, where, "unknown keys %s" % sorted(unknown))
    for key in ("min_gpu_memory_mib", "pcie_busy_util_pct", "min_shm_mib", "thermal_margin_c"):
        entry = data.get(key)
        _need(isinstance(entry, dict), key, "must be a mapping {value, source}")
        _need(isinstance(entry.get("value"), int) and not isinstance(entry.get("value"), bool) and entry["value"] > 0,
              key, "'value' must be a positive integer")
        _source(entry, key)
    legacy = data.get("legacy_packages")
    _need(isinstance(legacy, list), "legacy_packages", "must be a list")
    for index, entry in enumerate(legacy):
        where = "legacy_packages[%d]" % index
        _need(isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("replacement"), str),
              where, "must be {name, replacement, source}")
        _source(entry, where)
    patterns = data.get("driver_package_patterns")
    _need(isinstance(patterns, dict), "driver_package_patterns", "must be a mapping {source, patterns}")
    _source(patterns, "driver_package_patterns")
    _need(isinstance(patterns.get("patterns"), list) and patterns["patterns"], "driver_package_patterns.patterns",
          "must be a non-empty list of regular expressions")
    for index, pattern in enumerate(patterns["patterns"]):
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise DoctorDataError("data/doctor.yml: driver_package_patterns.patterns[%d]: not a regular expression (%s)"
                                  % (index, exc)) from exc
    unknown = set(data) - {"date", "xid", "min_gpu_memory_mib", "pcie_busy_util_pct", "min_shm_mib", "thermal_margin_c",
                           "legacy_packages",
                           "driver_package_patterns"}
    _need(not unknown, "top level", "unknown keys %s" % sorted(unknown))
    return data


def load_doctor_data(path=None):
    """Read and check ``data/doctor.yml`` (or ``path``)."""
    path = Path(path) if path else DEFAULT_PATH
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise DoctorDataError("%s cannot be read (%s)" % (path, exc.strerror or exc)) from exc
    except yaml.YAMLError as exc:
        raise DoctorDataError("%s is not YAML: %s" % (path, exc)) from exc
    return check_doctor_data(data)
