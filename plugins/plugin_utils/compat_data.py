# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load and validate ``data/compat.yml`` on the controller (cached by path and mtime)."""

from __future__ import annotations

import datetime
import difflib
import os
import re
from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import data_cache
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_index import CompatIndex

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "data" / "compat.yml"
DEFAULT_CATALOG_PATH = DEFAULT_PATH.parent / "gpu_catalog.yml"

SUPPORTED_SCHEMA = 1

_CACHE: dict = {}
_DIGESTS: dict = {}  # memory-cache key of a loaded file -> its disk-cache key (plugin_utils.data_cache)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CompatDataError(ValueError):
    """data/compat.yml is missing, unreadable or has the wrong shape."""


def _dates_to_text(value):
    """YAML turns 2026-11-29 into a date; the resolver compares text, so make every date ISO text."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()[:10]
    if isinstance(value, dict):
        return {k: _dates_to_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dates_to_text(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------------
# The whole shape of data/compat.yml. Every mapping lists its keys: a key the schema does not know is an
# error (nothing in the data goes unread), a missing required key is an error, and every value has a type.
# ---------------------------------------------------------------------------------------------------

GRADES = ("P", "Pc", "M", "S", "U")
_VERSION_TEXT = re.compile(r"^\d+(\.\d+)*$")
_DATE_TEXT = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


class _Type(object):
    """One kind of value; ``problem`` returns None or what is wrong with a value."""

    def __init__(self, name, check):
        self.name = name
        self.check = check

    def problem(self, value, where):
        return None if self.check(value) else "%s must be %s, not %r" % (where, self.name, value)


TEXT = _Type("text", lambda v: isinstance(v, str) and v != "")
INT = _Type("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool))
BOOL = _Type("true or false", lambda v: isinstance(v, bool))
VERSION = _Type("a quoted version like \"12.4\"", lambda v: isinstance(v, str) and bool(_VERSION_TEXT.match(v)))
DATE = _Type("a date like 2026-11-29 (or 2026-11)", lambda v: isinstance(v, str) and bool(_DATE_TEXT.match(v)))
GRADE = _Type("one of " + ", ".join(GRADES), lambda v: v in GRADES)
OWNED_ELSEWHERE = _Type("anything", lambda v: True)  # a section whose module checks it (gpu_catalog)


class _Optional(object):
    """A value that may also be null."""

    def __init__(self, kind):
        self.kind = kind


class _List(object):
    def __init__(self, item):
        self.item = item


class _Map(object):
    """A mapping with free keys (matching ``key``) and values of one kind."""

    def __init__(self, value, key=TEXT):
        self.value = value
        self.key = key


class _Enum(object):
    def __init__(self, *choices):
        self.choices = choices


class _Record(object):
    """A mapping with named keys. ``sourced``: it also carries source, grade and an optional date.
    ``open_keys``: keys beyond the listed ones are allowed (a section another module owns)."""

    def __init__(self, required, optional=None, sourced=False, open_keys=False):
        self.required = dict(required)
        self.optional = dict(optional or {})
        if sourced:
            self.required.update(source=TEXT, grade=GRADE)
            self.optional.update(date=DATE)
        self.open_keys = open_keys


SOURCED_ONLY = _Record({}, sourced=True)

# distro_drivers: written by tools/data_refresh.py (see the comment above that section of the data).
_DISTRO_FLAVOUR = _Record(
    {"package": TEXT, "version": VERSION, "package_version": TEXT, "suite": TEXT, "pulls_branch": _Optional(INT)},
    {"pulls": TEXT, "headless": TEXT, "headless_pulls_branch": _Optional(INT)})
_DISTRO_BRANCHES = _List(_Record({"branch": INT, "flavours": _Map(_DISTRO_FLAVOUR)}))
_DISTRO_PACKAGE = {"package": TEXT, "version": VERSION, "package_version": TEXT, "suite": TEXT}
DISTRO_DRIVERS = _Record(
    {"distros": _Map(_Record(
        {"distro": _Record(
            {"sources": _List(_Record({"archive": _Enum("ubuntu", "debian", "debian-security"), "suites": _List(TEXT),
                                       "components": _List(TEXT)}, {"arch": TEXT})),
             "branches": _DISTRO_BRANCHES,
             "cuda_toolkit": _Optional(_Record(_DISTRO_PACKAGE, {"nvcc": VERSION, "home": TEXT})),
             "nccl": _Optional(_Record(_DISTRO_PACKAGE)),
             "cudnn": _Optional(_Record(_DISTRO_PACKAGE, {"cuda": _Optional(VERSION), "downloads_from_nvidia": BOOL}))},
            {"backports": _DISTRO_BRANCHES}, sourced=True)},
        {"nvidia_repo": _Record({"verifiable": BOOL}, {"note": TEXT}, sourced=True)}))},
    sourced=True)
PYTHON_RANGE = _Record({"min": VERSION, "max": VERSION})
# fabric_manager.nvlink5: the packages of HGX B200/B300 boards (besides Fabric Manager) and of GB200/GB300 NVL trays (IMEX)
_NVLINK5_ROWS = {"branch_min": INT, "branch_max": _Optional(INT), "same_version": _List(TEXT)}
_NVLINK5_HGX = _Record({"forms": _List(TEXT), "kernel_modules": _List(TEXT),
                        "packages": _List(_Record(_NVLINK5_ROWS, {"own_version": _List(TEXT), "x86_64_only": _List(TEXT)}))},
                       {"distro_packages": _List(TEXT),
                        # the NVLSM release series NVIDIA pairs with a driver branch (stack_resolver._nvlsm_series)
                        "nvlsm": _List(_Record({"branch_min": INT, "branch_max": _Optional(INT), "series": _List(TEXT)}))})
_NVLINK5_NVL = _Record({"names": _List(TEXT), "service": TEXT, "nodes_config": TEXT, "packages": _List(_Record(_NVLINK5_ROWS))})
# Package names of a distribution's own driver archive (driver_package_names.distro.<family>).
DISTRO_DRIVER_NAMES = _Record(
    {"server_suffix": _Type("text", lambda v: isinstance(v, str)), "kernel_package": _Map(TEXT),
     "packages": _Map(_Map(_List(TEXT))), "dkms_module": _Map(TEXT), "same_version": _List(TEXT),
     "components": _List(TEXT), "fabric_manager": BOOL},
    {"handled": _List(TEXT), "dkms_packages": TEXT, "dkms_major": _Map(INT),
     # the component a branch's packages are in on some releases (named by the role when apt cannot install the set)
     "branch_components": _List(_Record({"versions": _List(TEXT), "branch_min": INT, "component": TEXT}, sourced=True))},
    sourced=True)

SCHEMA = _Record(
    {
        "schema_version": INT,
        "date": DATE,
        "architectures": _Map(_Record(
            {"name": TEXT, "cc_min": VERSION, "cc_max": VERSION, "first_cuda": VERSION, "last_cuda": _Optional(VERSION),
             "last_driver_branch": _Optional(INT), "min_driver_branch": _Optional(INT),
             "open_modules": _Enum("unsupported", "allowed", "required")},
            {"first_cuda_by_cc": _Map(VERSION, VERSION), "last_cuda_by_cc": _Map(VERSION, VERSION)},
            sourced=True, open_keys=True)),
        "gpus": _List(_Record({"name": TEXT}, {"arch": TEXT, "cc": VERSION, "display": BOOL}, sourced=True, open_keys=True)),
        "cuda": _Record({
            "toolkit_package": TEXT,
            "never_released": _List(_Record({"version": VERSION}, sourced=True)),
            "minor_compat": _List(_Record({"major": INT, "driver_min": VERSION, "branch_min": INT}, sourced=True)),
            "releases": _List(_Record(
                {"version": VERSION, "updates": _List(_Record({"version": VERSION}, {"driver": _Optional(VERSION)})),
                 "toolkit_driver_min": _Optional(VERSION), "os": _List(TEXT)},
                {"toolkit_driver_min_unconfirmed": VERSION}, sourced=True)),
        }, {
            # read by the cuda role (plugin_utils.cuda_plan)
            "repo_packages": _Record({"toolkit": _List(TEXT), "compat": TEXT}, {"nccl": _List(TEXT)}, sourced=True),
            # read by playbooks/ci_image.yml (plugin_utils.ci_image)
            "runtime_set": _Record({"packages": _List(TEXT), "repo_packages": _List(TEXT), "nccl": _List(TEXT)},
                                   {"hold": _Record({"runtime": _List(TEXT), "toolkit": _List(TEXT)})}, sourced=True),
            "image_require": _Record({"clauses": _List(_Record({"cuda": VERSION, "brands": _List(TEXT), "branches": _List(INT)},
                                                               sourced=True)),
                                      "unsupported_brands": _List(TEXT)}, sourced=True),
            "image_compat": _Record({"dir": TEXT, "library": TEXT}, sourced=True),
            "toolkit_host": _Record({"packages": _List(TEXT)}, sourced=True),
            "devel_set": _Record({"packages": _List(TEXT), "before_13": _List(TEXT), "nccl": _List(TEXT)}, sourced=True),
            "host_gcc": _List(_Record({"cuda_min": VERSION, "gcc_max": INT}, sourced=True)),
            "pip_wheels": _List(_Record({"cuda": VERSION, "version": VERSION, "root": TEXT, "packages": _List(TEXT)},
                                        sourced=True)),
        }),
        "driver_branches": _List(_Record(
            {"branch": INT, "designation": _Optional(_Enum("LTSB", "PB", "NFB")), "eol": _Optional(TEXT),
             "status": _Enum("active", "eol"), "packages": TEXT, "versions": _List(VERSION)},
            sourced=True)),
        "driver_packages": _Map(_Record({"open": _List(TEXT), "proprietary": _List(TEXT), "lock": _List(TEXT)}, sourced=True)),
        "kernel_modules": _Record({"open_default_from_branch": INT, "proprietary_removed_from_branch": _Optional(INT)}, sourced=True),
        "driver_package_names": _Record(
            {"family": _List(TEXT),
             "nvidia_repo": _Map(_List(_Record(
                 {"branch_min": INT, "branch_max": _Optional(INT), "kernel": _Map(TEXT), "same_version": _List(TEXT),
                  "dkms_module": TEXT},
                 sourced=True))),
             # read by the nvidia_driver role (plugin_utils.nvidia_driver_plan): the distributions' archives
             "distro": _Map(DISTRO_DRIVER_NAMES),
             "upgrade_blacklist": _List(TEXT),
             # read by plugin_utils.nvidia_driver_plan's branch pin (issue 48): NVIDIA's exact names without a branch,
             # each list with its source
             "branchless": _Record({"names": _List(TEXT)}, sourced=True),
             "nvidia_repo_branchless": _Record({"branch_min": INT, "names": _List(TEXT)}, sourced=True)},
            # read by plugin_utils.nvidia_driver_plan's branch pin (issue 48): each archive's Release Origin
            {"origins": _Map(TEXT), "origins_also": _Map(_List(TEXT))},
            sourced=True),
        "cudnn": _List(_Record(
            {"version": VERSION, "builds": _Map(_List(VERSION), VERSION), "cc_min": VERSION, "cc_max": VERSION},
            {"driver_min": _Map(VERSION, VERSION)}, sourced=True)),
        "nccl": _List(_Record({"version": VERSION, "cuda_majors": _List(VERSION)}, sourced=True)),
        "pytorch": _Record({
            "index_url_base": TEXT,
            "releases": _List(_Record(
                {"version": VERSION, "patches": _List(VERSION), "python": PYTHON_RANGE, "pypi_default": TEXT,
                 "torchvision": _Optional(VERSION), "torchaudio": _Optional(VERSION),
                 "variants": _List(_Record(
                     {"name": TEXT, "cuda": VERSION, "cudnn": _Optional(VERSION), "archs": _List(VERSION), "ptx": BOOL,
                      "experimental": BOOL},
                     {"archs_aarch64": _List(VERSION), "ptx_aarch64": BOOL}))},
                {"notes": TEXT}, sourced=True)),
        }),
        "tensorflow": _List(_Record(
            {"version": VERSION, "patches": _List(VERSION), "python": PYTHON_RANGE, "cuda": VERSION, "cudnn": VERSION,
             "and_cuda": _Optional(_Map(TEXT))},
            sourced=True)),
        "jetpack": _List(_Record(
            {"version": VERSION, "l4t": _List(VERSION), "ubuntu": VERSION, "cuda": _Optional(VERSION),
             "cudnn": _Optional(VERSION), "tensorrt": _Optional(VERSION), "devices": _List(TEXT),
             "pytorch": _Optional(_Record({"route": TEXT, "families": _List(TEXT)}))},
            {"notes": TEXT}, sourced=True)),
        "jetson_pytorch": _Map(_Record(
            {"version": _Optional(TEXT), "variant": TEXT, "index_url": _Optional(TEXT), "python": _Optional(VERSION),
             "warning": _Optional(TEXT)},
            {"from_pytorch_releases": BOOL, "index_replaces_pypi": BOOL}, sourced=True)),
        "fabric_manager": _Record(
            {"service": TEXT,
             "packages": _List(_Record({"branch_min": INT, "branch_max": _Optional(INT), "package": TEXT, "meta": _Optional(TEXT)},
                                       {"method": _Enum("distro", "nvidia_repo")}, sourced=True)),
             "nvlink5": _Record({"cc_min": VERSION, "extra_packages": _List(TEXT)},
                                {"supported": BOOL, "installed_by_roles": BOOL, "hgx": _NVLINK5_HGX, "nvl": _NVLINK5_NVL,
                                 "driver_min": VERSION},
                                sourced=True)},
            {"nscq": _List(_Record({"branch_min": INT, "branch_max": _Optional(INT), "package": TEXT},
                                   {"method": _Enum("distro", "nvidia_repo")}, sourced=True)),
             "driver_profile": _List(_Record(
                 {"method": _Enum("distro", "nvidia_repo"), "os_family": TEXT, "profile": _Enum("desktop", "server")},
                 {"depends": TEXT}, sourced=True))},
            sourced=True),
        "machines": _Map(_Record({"cuda_repo": TEXT, "pytorch_cuda": BOOL, "tensorflow_cuda": BOOL}, sourced=True)),
        "os": _Record({
            "default_python": VERSION,
            "default_driver_method": _Enum("distro", "nvidia_repo"),
            # pythons (optional): every Python X.Y the OS archive packages, where the data has read them; a plan asking
            # another is refused (python_env installs Pythons from the archive only, or python_env_interpreters)
            # nvidia_repo (optional): NVIDIA's repository for the OS: its first driver branch and the CUDA releases
            # confirmed in it; distro_cuda_minimum (optional): package versions the archive's CUDA toolkit needs at least
            "distros": _Map(_Record({"repo_distro": TEXT, "python": VERSION, "last_cuda": _Optional(VERSION), "supported": BOOL},
                                    {"pythons": _List(VERSION),
                                     "nvidia_repo": _Record(
                                         {"branch_min": INT},
                                         {"cuda_confirmed": _List(_Record({"version": VERSION, "package": TEXT, "package_version": TEXT},
                                                                          sourced=True))},
                                         sourced=True),
                                     "distro_cuda_minimum": _List(_Record(
                                         {"package": TEXT, "version": TEXT, "suite": TEXT}, {"reason": TEXT}, sourced=True))},
                                    sourced=True)),
        }),
    },
    {
        "gpu_chips": OWNED_ELSEWHERE,
        "container_toolkit": _Record({}, sourced=True, open_keys=True),
        # read by the nccl role (module_utils._nccl.p2p_assessment)
        "nccl_p2p_issues": _List(_Record({"gpus": _List(TEXT), "driver_fixed": VERSION, "effect": TEXT}, sourced=True)),
        "cudnn_names": _Record(
            {"apt": _Map(_Record({"packages": _List(TEXT), "version": TEXT, "header": TEXT})),
             "tarball": TEXT, "tarball_url": TEXT, "tarball_arch": _Map(TEXT), "wheel": TEXT},
            sourced=True),
        "distro_drivers": DISTRO_DRIVERS,
    },
)


def _entry_name(value):
    """A short label for a list entry: its version, name or branch."""
    if isinstance(value, dict):
        for key in ("version", "name", "branch", "major", "package"):
            if value.get(key) is not None:
                return " (%s %s)" % (key, value[key])
    return ""


def _shape_problems(value, kind, where, out):
    """Append every problem of ``value`` against ``kind`` to ``out`` (text naming the entry and key)."""
    if isinstance(kind, _Optional):
        if value is not None:
            _shape_problems(value, kind.kind, where, out)
    elif isinstance(kind, _Type):
        problem = kind.problem(value, where)
        if problem:
            out.append(problem)
    elif isinstance(kind, _Enum):
        if value not in kind.choices:
            out.append("%s must be one of %s, not %r" % (where, ", ".join(map(str, kind.choices)), value))
    elif isinstance(kind, _List):
        if not isinstance(value, list):
            out.append("%s must be a list, not %s" % (where, type(value).__name__))
            return
        for pos, item in enumerate(value):
            _shape_problems(item, kind.item, "%s[%d]%s" % (where, pos, _entry_name(item)), out)
    elif isinstance(kind, _Map):
        if not isinstance(value, dict):
            out.append("%s must be a mapping, not %s" % (where, type(value).__name__))
            return
        for key, item in value.items():
            problem = kind.key.problem(key, "%s: the key %r" % (where, key))
            if problem:
                out.append(problem)
            _shape_problems(item, kind.value, "%s.%s" % (where, key), out)
    elif isinstance(kind, _Record):
        if not isinstance(value, dict):
            out.append("%s must be a mapping, not %s" % (where, type(value).__name__))
            return
        for key, sub in kind.required.items():
            if key not in value:
                out.append("%s: key '%s' is missing" % (where or "top level", key))
            else:
                _shape_problems(value[key], sub, "%s.%s" % (where, key) if where else key, out)
        for key, item in value.items():
            if key in kind.required:
                continue
            if key in kind.optional:
                _shape_problems(item, kind.optional[key], "%s.%s" % (where, key) if where else key, out)
            elif not kind.open_keys:
                known = sorted(set(kind.required) | set(kind.optional))
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = "did you mean '%s'?" % close[0] if close else "known keys: %s" % ", ".join(known)
                out.append("%s: key '%s' is not known (nothing reads it); %s" % (where or "top level", key, hint))


def shape_problems(data):
    """Every shape problem of parsed (dates-as-text) compatibility data, as text; empty when fine."""
    out = []
    _shape_problems(data, SCHEMA, "", out)
    return out


def _default_dates(value, file_date):
    """Give every sourced entry the file's ``date`` unless it has its own."""
    if isinstance(value, dict):
        if "source" in value:
            value.setdefault("date", file_date)
        for item in value.values():
            _default_dates(item, file_date)
    elif isinstance(value, list):
        for item in value:
            _default_dates(item, file_date)


def validate(data, path="data/compat.yml"):
    """Check the whole shape; raise CompatDataError naming the entry and key of each problem (first five).

    Every sourced entry without a ``date`` gets the file's.
    """
    if not isinstance(data, dict):
        raise CompatDataError(f"{path}: the top level must be a mapping, not {type(data).__name__}")
    if data.get("schema_version") != SUPPORTED_SCHEMA:
        raise CompatDataError(
            f"{path}: schema_version {data.get('schema_version')} is not supported (this collection reads {SUPPORTED_SCHEMA})"
        )
    problems = shape_problems(data)
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise CompatDataError(f"{path}: " + "; ".join(problems[:5]) + more)
    _default_dates(data, data["date"])
    return data


def _load_yaml_cached(path, what, key_prefix, finish):
    """Parse the YAML file ``path`` and return ``finish(parsed)``, cached until the file's mtime or size
    changes. ``what`` names the file in errors; ``key_prefix`` keeps the caches of the files apart."""
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise CompatDataError(f"cannot read {what} {path}: {exc.strerror}") from exc
    key = key_prefix + str(path.resolve())
    cached = _CACHE.get(key)
    if cached and cached[0] == stat.st_mtime_ns and cached[1] == stat.st_size:
        return cached[2]
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError as exc:
        raise CompatDataError(f"cannot read {what} {path}: {exc.strerror}") from exc
    # Ansible's worker processes share the parsed, checked result through the disk cache (keyed by the bytes)
    disk_key = data_cache.key(key_prefix, text)
    result = data_cache.get("yaml", disk_key)
    if result is None:
        try:
            raw = yaml.load(text.decode("utf-8"), Loader=_LOADER)  # noqa: S506 - a SafeLoader
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise CompatDataError(f"{path} is not valid YAML: {exc}") from exc
        result = finish(_dates_to_text(raw))
        data_cache.put("yaml", disk_key, result)
    _CACHE[key] = (stat.st_mtime_ns, stat.st_size, result)
    _DIGESTS[key] = disk_key
    return result


def load_compat(path=None):
    """Return the parsed, validated compatibility data. Cached until the file's mtime changes."""
    path = Path(path) if path else DEFAULT_PATH
    return _load_yaml_cached(path, "compatibility data", "", lambda raw: validate(raw, str(path)))


def load_compat_index(path=None):
    """The resolver's index (plugin_utils.compat_index.CompatIndex) of the loaded data, built once per loaded data
    and passed to ``stack_resolver.resolve`` explicitly (no cache keyed by object identity)."""
    data = load_compat(path)
    key = ("compat-index", str(Path(path or DEFAULT_PATH).resolve()))
    cached = _CACHE.get(key)
    if cached and cached[0] is data:
        return cached[1]
    index = CompatIndex(data)
    _CACHE[key] = (data, index)
    return index


def load_catalog(path=None):
    """Return the generated GPU catalog (``data/gpu_catalog.yml``, see tools/gpu_catalog.py): a mapping with
    ``date``, ``sources`` and ``devices`` (PCI device id -> record). Cached until the file's mtime changes."""
    path = Path(path) if path else DEFAULT_CATALOG_PATH

    def checked(catalog):
        if not isinstance(catalog, dict) or not isinstance(catalog.get("devices"), dict) or not catalog.get("date"):
            raise CompatDataError(f"{path}: a GPU catalog needs 'date' and the mapping 'devices' (run make gpu-catalog)")
        return catalog

    return _load_yaml_cached(path, "the GPU catalog", "catalog:", checked)


def load_gpu_index(data_path=None, catalog_path=None):
    """The GPU lookup index (plugin_utils.gpu_catalog.GpuIndex) over compat.yml and the catalog.

    Built once per pair of files and kept while both loaders return the same (unchanged) data, so a plan
    costs no rebuild.
    ``catalog_path=False`` leaves the catalog out (the hand-kept entries alone, e.g. a frozen test file).
    """
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.plugin_utils.gpu_catalog import GpuIndex

    data = load_compat(data_path)
    catalog = None if catalog_path is False else load_catalog(catalog_path)
    key = ("index", str(Path(data_path or DEFAULT_PATH).resolve()),
           None if catalog_path is False else str(Path(catalog_path or DEFAULT_CATALOG_PATH).resolve()))
    cached = _CACHE.get(key)
    if cached and cached[0] is data and cached[1] is catalog:
        return cached[2]
    # built once for all of Ansible's worker processes (plugin_utils.data_cache), keyed by both files' bytes
    compat_digest = _DIGESTS.get(key[1])
    catalog_digest = None if catalog is None else _DIGESTS.get("catalog:" + key[2])
    disk_key = data_cache.key("gpu-index", compat_digest, catalog_digest)
    index = data_cache.get("gpu-index", disk_key)
    if index is None:
        index = GpuIndex(data, catalog)
        data_cache.put("gpu-index", disk_key, index)
    _CACHE[key] = (data, catalog, index)
    return index
