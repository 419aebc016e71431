# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generate ``data/gpu_catalog.yml``: every NVIDIA GPU from NVIDIA's own device list.

Inputs (fetched from the archives, or local copies for air-gapped use and for the tests):

* ``supported-gpus.json`` of the newest driver branch in Ubuntu's archive (package
  ``nvidia-kernel-common-<branch>``, ``restricted``), and of the newest branch its entries name as a
  ``legacybranch`` (580 for Maxwell to Volta in 595's list): device id, sub-device id, the exact name
  ``nvidia-smi`` prints, the legacy branch, features such as ``kernelopen``;
* the NVIDIA (10de) section of ``pci.ids`` (Debian package ``pci.ids``), which names each device's chip
  (``GA102``, ``AD102GL`` ...);
* the hand-kept chip table ``gpu_chips`` of ``data/compat.yml`` (chip -> architecture and CC), used
  here only to report the devices it cannot place.

Writes the catalog (dated, with its sources and their SHA256: what it read can be fetched again) and, with
``--pci-output``, the NVIDIA section it read. Prints a summary: entries, devices, chips, and anything it could not
place. The one recorded copy of that section is the tests' frozen input, ``tests/fixtures/catalog/pci-ids-10de.txt``
(the collection ships none: nothing at run time reads pci.ids from ``data/``).

    tools/gpu_catalog.py                       # fetch (Ubuntu noble-updates, Debian testing) and write
    tools/gpu_catalog.py --supported-gpus 595=path/supported-gpus.json --supported-gpus 580=... \\
                         --pci-ids tests/fixtures/catalog/pci-ids-10de.txt   # local copies only, no network
    tools/gpu_catalog.py --check               # exit 1 when data/gpu_catalog.yml would change

Maintainer tooling: not part of the collection tarball. Fetching goes through ``tools/dlboxdata``
(index checked against the suite's InRelease SHA256, .deb against the index) and needs ``dpkg-deb``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
CATALOG = DATA / "gpu_catalog.yml"
COMPAT = DATA / "compat.yml"

# The archives this project already uses (tests/images/build.sh, the host's apt sources); override by env.
UBUNTU_MIRROR = os.environ.get("UBUNTU_MIRROR", "http://archive.ubuntu.com/ubuntu")
DEBIAN_MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")

# The collection's GPU index code, under its own name (tools/dlboxdata/collection.py): one module, not a copy.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from dlboxdata.collection import collection_module  # noqa: E402  pylint: disable=wrong-import-position

gpu_catalog = collection_module("plugins.plugin_utils.gpu_catalog")


class CatalogError(RuntimeError):
    """An input is missing or has the wrong shape."""


# ------------------------------------------------------------------------------------------------
# Parsing (pure)
# ------------------------------------------------------------------------------------------------


def parse_packages(text):
    """Debian ``Packages`` index text -> list of {field: value} stanzas (continuation lines joined)."""
    stanzas = []
    for block in re.split(r"\n\s*\n", text):
        fields, last = {}, None
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and last:
                fields[last] += "\n" + line.strip()
            elif ":" in line:
                last, _sep, value = line.partition(":")
                fields[last] = value.strip()
        if fields.get("Package"):
            stanzas.append(fields)
    return stanzas


def _debian_version_key(version):
    """A sort key good enough for one package's versions in one pocket (numbers compare as numbers)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", version)]


def kernel_common_packages(stanzas, compare=None):
    """{branch (int): newest stanza} for ``nvidia-kernel-common-<branch>`` (not -server: same list).

    ``compare(a, b)`` orders Debian versions (dlboxdata.indexes.compare_versions when fetching)."""
    best = {}
    for stanza in stanzas:
        match = re.fullmatch(r"nvidia-kernel-common-(\d+)", stanza["Package"])
        if not match:
            continue
        branch = int(match.group(1))
        if branch not in best or _newer(stanza["Version"], best[branch]["Version"], compare):
            best[branch] = stanza
    return best


def _newer(left, right, compare):
    if compare is not None:
        return compare(left, right) > 0
    return _debian_version_key(left) > _debian_version_key(right)


def parse_supported_gpus(text, label="supported-gpus.json"):
    """``supported-gpus.json`` -> list of entries; checks the shape NVIDIA ships (``{"chips": [...]}``)."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise CatalogError("%s is not JSON: %s" % (label, exc)) from exc
    chips = raw.get("chips") if isinstance(raw, dict) else None
    if not isinstance(chips, list) or not chips:
        raise CatalogError("%s: expected {\"chips\": [...]} with entries" % label)
    for entry in chips:
        if not isinstance(entry, dict) or not re.fullmatch(r"0x[0-9A-Fa-f]{4}", str(entry.get("devid"))) or not entry.get("name"):
            raise CatalogError("%s: entry without devid/name: %r" % (label, entry))
    return chips


def legacy_branches(entries):
    """The driver branches named by ``legacybranch`` ("580.xx" -> 580), newest first."""
    found = set()
    for entry in entries:
        match = re.match(r"(\d+)\.", str(entry.get("legacybranch") or ""))
        if match:
            found.add(int(match.group(1)))
    return sorted(found, reverse=True)


def nvidia_pci_section(text):
    """Whole pci.ids (or already the 10de section) -> (version, date, section text starting at ``10de``)."""
    version = re.search(r"^#\s*Version:\s*(\S+)", text, re.M)
    date = re.search(r"^#\s*Date:\s*(\S+)", text, re.M)
    lines = text.split("\n")
    out, inside = [], False
    for line in lines:
        if line.startswith("10de  "):
            inside = True
        elif inside and re.match(r"^[0-9a-fA-F]{4}  ", line):
            break
        elif inside and line and not line.startswith(("\t", "#")):
            break
        if inside:
            out.append(line)
    while out and (not out[-1].strip() or out[-1].startswith("#")):
        out.pop()
    if not out:
        raise CatalogError("the pci.ids input has no NVIDIA (10de) section")
    return (version.group(1) if version else None, date.group(1) if date else None, "\n".join(out) + "\n")


def parse_pci_devices(section):
    """10de section -> {device id: label} (``"2684": "AD102 [GeForce RTX 4090]"``)."""
    devices = {}
    for line in section.split("\n"):
        match = re.match(r"^\t([0-9a-fA-F]{4})  (.+)$", line)
        if match:
            devices[match.group(1).lower()] = match.group(2).strip()
    return devices


# ------------------------------------------------------------------------------------------------
# Building the catalog (pure)
# ------------------------------------------------------------------------------------------------


def build_catalog(lists, pci_devices, chip_table, sources, date):
    """Merge NVIDIA's lists (newest branch wins) with pci.ids chips.

    ``lists``: {branch (int): [supported-gpus entries]}; ``chip_table``: data/compat.yml ``gpu_chips``.
    Returns (catalog mapping, summary mapping).
    """
    devices = {}
    for branch in sorted(lists):  # oldest first, so that the newest list overwrites
        grouped = {}
        for entry in lists[branch]:
            grouped.setdefault(entry["devid"][2:].lower(), []).append(entry)
        for dev, entries in grouped.items():
            plain = [e for e in entries if not e.get("subdevid")]
            main = plain[0] if plain else entries[0]
            variants = []
            for entry in entries:
                if entry.get("subdevid") and entry["name"] != main["name"]:
                    sub = "%s:%s" % (str(entry.get("subvendorid") or "")[2:].lower(), entry["subdevid"][2:].lower())
                    if {"sub": sub, "name": entry["name"]} not in variants:
                        variants.append({"sub": sub, "name": entry["name"]})
            legacy = main.get("legacybranch")
            record = {
                "name": main["name"],
                "chip": None,
                "pci_name": None,
                "legacy": str(legacy) if legacy else None,
                "kernelopen": "kernelopen" in (main.get("features") or []),
                "branch": str(branch),
            }
            if variants:
                record["variants"] = variants
            devices[dev] = record
    chips_index = gpu_catalog.chip_table(chip_table)
    unplaced, placed_chips, by_arch = [], set(), {}
    for dev, record in devices.items():
        label = pci_devices.get(dev)
        record["pci_name"] = label
        record["chip"] = gpu_catalog.chip_word(label) if label else None
        base = gpu_catalog.base_chip(record["chip"], chips_index) if record["chip"] else None
        if base:
            placed_chips.add(base)
            arch = chips_index[base]["arch"]
            by_arch[arch] = by_arch.get(arch, 0) + 1
        else:
            unplaced.append(dev)
    newest = max(lists)
    modern = [d for d in unplaced if devices[d]["legacy"] in (None, "") or _legacy_major(devices[d]["legacy"]) >= 470]
    summary = {
        "entries": {str(b): len(lists[b]) for b in sorted(lists)},
        "devices": len(devices),
        "chips": len(placed_chips),
        "devices_by_architecture": dict(sorted(by_arch.items())),
        "unplaced": len(unplaced),
        "unplaced_legacy": _count_by(devices[d]["legacy"] or "current" for d in unplaced),
        "unplaced_current": [
            "%s %s (%s)" % (d, devices[d]["name"], devices[d]["pci_name"] or "not in pci.ids") for d in sorted(modern)
        ],
        "legacy_with_kernelopen": sorted(
            d for d, r in devices.items() if r["legacy"] and r["kernelopen"] and r["branch"] == str(newest)
        ),
    }
    catalog = {
        "schema_version": 1,
        "date": date,
        "sources": sources,
        "summary": {k: v for k, v in summary.items() if k not in ("unplaced_current", "legacy_with_kernelopen")},
        "devices": dict(sorted(devices.items())),
    }
    catalog["summary"]["legacy_with_kernelopen"] = len(summary["legacy_with_kernelopen"])
    return catalog, summary


def _legacy_major(text):
    match = re.match(r"(\d+)", str(text or ""))
    return int(match.group(1)) if match else 0


def _count_by(values):
    out = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -_legacy_major(kv[0])))


# libyaml's emitter where PyYAML has it: the same text for the catalog's one-line records (checked: the whole
# catalog renders byte for byte the same) in a fifth of the time; make gpu-catalog --check and the unit tests render it.
_FLOW_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _flow(value):
    """One-line YAML for a scalar, list or mapping (deterministic)."""
    if not isinstance(value, (dict, list)):  # a bare scalar would get a document end marker
        return _flow([value])[1:-1]
    return yaml.dump(value, Dumper=_FLOW_DUMPER, default_flow_style=True, width=100000, sort_keys=False,
                     allow_unicode=True).strip()


class _IndentedDumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
    """Block style with lists indented under their key (as yamllint's default wants)."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


_MAX = 160


def render_catalog(catalog):
    """The catalog as YAML text: header, sources and summary in block style; a device on one line when it fits
    in 160 characters, else as a block with one line per name variant."""
    head = {k: v for k, v in catalog.items() if k != "devices"}
    lines = [
        "# GENERATED by tools/gpu_catalog.py (make gpu-catalog): do not edit by hand; edit the hand-kept",
        "# `gpus` and `gpu_chips` of data/compat.yml instead. Every NVIDIA GPU of NVIDIA's own device list",
        "# (supported-gpus.json of the driver packages named under `sources`), keyed by PCI device id (10de:xxxx):",
        "#   name: what nvidia-smi prints; variants: other names for sub-system ids (subvendor:subdevice);",
        "#   legacy: the legacy driver branch that last supports it (null: the current branch);",
        "#   kernelopen: NVIDIA's feature flag (in 595's list also on Maxwell..Volta, which cannot run the open",
        "#   modules: the architecture rules of data/compat.yml decide); branch: the list it was read from;",
        "#   chip / pci_name: from pci.ids; the chip is turned into an architecture and CC by `gpu_chips`.",
        "---",
        yaml.dump(head, Dumper=_IndentedDumper, default_flow_style=False, sort_keys=False, width=_MAX - 10,
                  allow_unicode=True).rstrip(),
        "devices:",
    ]
    for dev, record in catalog["devices"].items():
        line = '  "%s": %s' % (dev, _flow(record))
        if "variants" not in record and len(line) <= _MAX:
            lines.append(line)
            continue
        lines.append('  "%s":' % dev)
        for key, value in record.items():
            if key == "variants":
                lines.append("    variants:")
                lines.extend("      - %s" % _flow(item) for item in value)
            else:
                lines.append("    %s: %s" % (key, _flow(value)))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# Fetching (network; the tests never call these)
# ------------------------------------------------------------------------------------------------


def _sha256(blob):
    return hashlib.sha256(blob).hexdigest()


def _indexes():
    """tools/dlboxdata.indexes (the data-refresh tool's archive reader), imported only when fetching."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dlboxdata import indexes  # pylint: disable=import-outside-toplevel

    return indexes


def _member(archive, stanza, member):
    indexes = _indexes()
    with tempfile.TemporaryDirectory() as tmp:
        deb = archive.fetch_deb(stanza["Filename"], stanza["SHA256"], tmp)
        return indexes.extract_member(deb, member)


def fetch_supported_gpus(mirror, suite, component, arch):
    """{branch: (source mapping, entries)} for the newest branch and the newest legacy branch it names."""
    indexes = _indexes()
    archive = indexes.Archive(mirror)
    stanzas = archive.packages(suite, component, arch)
    index = archive.location("dists/%s/%s/binary-%s/Packages" % (suite, component, arch))
    packages = kernel_common_packages(stanzas, indexes.compare_versions)
    if not packages:
        raise CatalogError("%s lists no nvidia-kernel-common-<branch> package" % index)
    newest = max(packages)
    wanted = [newest]
    out = {}
    while wanted:
        branch = wanted.pop()
        stanza = packages[branch]
        member = "usr/share/doc/%s/supported-gpus.json" % stanza["Package"]
        entries = parse_supported_gpus(_member(archive, stanza, member).decode("utf-8"), stanza["Package"])
        out[branch] = (
            {"branch": str(branch), "package": stanza["Package"], "version": stanza["Version"], "index": index,
             "file": stanza["Filename"], "sha256": stanza.get("SHA256"), "member": member, "entries": len(entries)},
            entries,
        )
        if branch == newest:  # the newest legacy branch it names still has its own list (580 for 595)
            legacy = next((b for b in legacy_branches(entries) if b in packages), None)
            if legacy is not None:
                wanted.append(legacy)
    return out


def fetch_pci_ids(mirror, suite):
    indexes = _indexes()
    archive = indexes.Archive(mirror)
    stanzas = archive.packages(suite, "main", "all")
    stanza = next((s for s in stanzas if s["Package"] == "pci.ids"), None)
    if stanza is None:
        raise CatalogError("%s has no pci.ids package" % archive.location("dists/%s/main/binary-all/Packages" % suite))
    text = _member(archive, stanza, "usr/share/misc/pci.ids").decode("utf-8")
    return {"package": "pci.ids", "version": stanza["Version"], "suite": suite,
            "index": archive.location("dists/%s/main/binary-all/Packages" % suite),
            "file": stanza["Filename"], "sha256": stanza.get("SHA256")}, text


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------


def _local_list(spec):
    branch, _sep, path = spec.partition("=")
    if not branch.isdigit() or not path:
        raise CatalogError("--supported-gpus takes BRANCH=PATH, e.g. 595=supported-gpus.json, not %r" % spec)
    blob = Path(path).read_bytes()
    entries = parse_supported_gpus(blob.decode("utf-8"), path)
    return int(branch), ({"branch": branch, "file": Path(path).name, "sha256": _sha256(blob), "entries": len(entries)}, entries)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--supported-gpus", action="append", default=[], metavar="BRANCH=PATH",
                        help="a local supported-gpus.json (repeat); without it the lists are fetched")
    parser.add_argument("--pci-ids", metavar="PATH", help="a local pci.ids or its 10de section; without it fetched")
    parser.add_argument("--ubuntu-mirror", default=UBUNTU_MIRROR, help="Ubuntu archive (URL or local folder)")
    parser.add_argument("--debian-mirror", default=DEBIAN_MIRROR, help="Debian archive (URL or local folder)")
    parser.add_argument("--ubuntu-suite", default="noble-updates")
    parser.add_argument("--debian-suite", default="testing", help="suite whose pci.ids package is read (default testing)")
    parser.add_argument("--compat", default=str(COMPAT), help="data/compat.yml (for the gpu_chips table)")
    parser.add_argument("--output", default=str(CATALOG))
    parser.add_argument("--pci-output", default=None, help="also write the 10de section it read here (default: not written)")
    parser.add_argument("--date", default=None, help="catalog date (default: today, UTC)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the output would change")
    args = parser.parse_args(argv)
    try:
        date = args.date or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        if args.supported_gpus:
            lists = dict(_local_list(spec) for spec in args.supported_gpus)
        else:
            lists = fetch_supported_gpus(args.ubuntu_mirror, args.ubuntu_suite, "restricted", "amd64")
        if args.pci_ids:
            blob = Path(args.pci_ids).read_bytes()
            pci_source = {"file": Path(args.pci_ids).name, "sha256": _sha256(blob)}
            pci_text = blob.decode("utf-8")
        else:
            pci_source, pci_text = fetch_pci_ids(args.debian_mirror, args.debian_suite)
        version, pci_date, section = nvidia_pci_section(pci_text)
        pci_source.update({"database_version": version, "database_date": pci_date})
        with open(args.compat, encoding="utf-8") as handle:
            chip_table = (yaml.safe_load(handle) or {}).get("gpu_chips") or []
        sources = {
            "supported_gpus": [lists[b][0] for b in sorted(lists, reverse=True)],
            "pci_ids": pci_source,
            "chips": "data/compat.yml gpu_chips",
        }
        catalog, summary = build_catalog({b: e for b, (_m, e) in lists.items()}, parse_pci_devices(section),
                                         chip_table, sources, date)
    except (CatalogError, OSError, RuntimeError, yaml.YAMLError) as exc:
        print("gpu_catalog: %s" % exc, file=sys.stderr)
        return 2
    text = render_catalog(catalog)
    pinned = None
    if args.pci_output and (not args.pci_ids or Path(args.pci_ids).resolve() != Path(args.pci_output).resolve()):
        pinned = ("# NVIDIA (vendor 10de) section of pci.ids %s (%s), from %s; pinned by tools/gpu_catalog.py.\n"
                  "# pci.ids: GPL-2.0-or-later or BSD-3-Clause, maintained by the PCI ID Project (pci-ids.ucw.cz).\n"
                  % (version, pci_date, pci_source.get("file") or "a local copy")) + section
    _print_summary(summary, catalog)
    if args.check:
        current = Path(args.output).read_text(encoding="utf-8") if Path(args.output).exists() else ""
        same = _strip_date(current) == _strip_date(text)
        print("catalog %s" % ("up to date" if same else "WOULD CHANGE: run make gpu-catalog"))
        return 0 if same else 1
    Path(args.output).write_text(text, encoding="utf-8")
    if pinned is not None:
        Path(args.pci_output).write_text(pinned, encoding="utf-8")
    print("wrote %s%s" % (args.output, " and %s" % args.pci_output if pinned is not None else ""))
    return 0


def _strip_date(text):
    return re.sub(r"(?m)^date: .*$", "", text)


def _print_summary(summary, catalog):
    out = io.StringIO()
    out.write("entries per list: %s\n" % ", ".join("%s: %d" % kv for kv in summary["entries"].items()))
    out.write("devices: %d; chips placed: %d\n" % (summary["devices"], summary["chips"]))
    out.write("devices by architecture: %s\n" % ", ".join("%s %d" % kv for kv in summary["devices_by_architecture"].items()))
    out.write("not placed (no chip in gpu_chips): %d, by legacy branch: %s\n" % (
        summary["unplaced"], ", ".join("%s %d" % kv for kv in summary["unplaced_legacy"].items())))
    for line in summary["unplaced_current"]:
        out.write("  not placed although R470 or newer supports it: %s\n" % line)
    out.write("legacy entries that carry kernelopen in the newest list: %d\n" % len(summary["legacy_with_kernelopen"]))
    out.write("sources: %s\n" % json.dumps(catalog["sources"], sort_keys=True))
    sys.stdout.write(out.getvalue())


if __name__ == "__main__":
    sys.exit(main())
