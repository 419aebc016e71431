"""Vendor facts live only in data/: no role's tasks/ or vars/ reads a file under data/ or spells a package name
that data/compat.yml defines (issue 20). The roles get both through dlbox.stack.role_plan and their
<role>_plan filters, which read data/ through the validating loader.

The package names are derived from data/compat.yml itself (every string under a package key, name templates
turned into patterns), so a name added to the data is guarded at once. Comments may keep pointing at
data/compat.yml; command and service names that happen to equal a package name are allowed explicitly.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "data" / "compat.yml"

# Command, service and unit names that are also package names in data/ (a task runs or starts them).
ALLOWED = {
    "nvidia-persistenced",  # the daemon and its systemd unit
    "nvidia-smi",  # the command
    "nvidia-fabricmanager",  # the systemd service of Fabric Manager
}
# Lines where a data name is not a package: (file, line regex, why).
ALLOWED_LINES = [
    ("roles/nvidia_container_toolkit/tasks/repository.yml", re.compile(r"^\s*name: nvidia-container-toolkit$"),
     "the deb822 source's file name, /etc/apt/sources.list.d/nvidia-container-toolkit.sources"),
]
# Roles whose tasks/vars still hold names, with the issue that removes them. Keep this empty.
KNOWN_EXCEPTIONS = {
    # "nvidia_driver": "issue 20: the nvidia_driver refactor moves its package names to data/",
}

# Keys whose strings are package names (or name templates); some keys below them hold other words.
_PACKAGE_KEY = re.compile(r"(^|_)(package|packages|meta|kernel|kernel_package|same_version|handled|toolkit|compat|nccl)$")
_NOT_NAMES = re.compile(r"\.(components|method|dkms_module(\.\w+)?|family|upgrade_blacklist|source|grade|date|note)$")
_NAME = re.compile(r"^[a-z0-9{][a-z0-9.+{}*_-]*$")
_PLACEHOLDER_DIGITS = ("major", "minor", "branch", "cuda_major")


def _walk(value, path, under_package, out):
    if isinstance(value, dict):
        for key, item in value.items():
            here = path + "." + str(key) if path else str(key)
            _walk(item, here, under_package or bool(_PACKAGE_KEY.search(str(key))), out)
    elif isinstance(value, list):
        for item in value:
            _walk(item, path, under_package, out)
    elif isinstance(value, str) and under_package and not _NOT_NAMES.search(path) and _NAME.match(value):
        if re.search(r"[a-z]", value) and ("-" in value or re.search(r"\d", value)):  # not "pinning", "distro", "1.18.2"
            out.setdefault(value, path)


@functools.lru_cache(maxsize=None)   # data/compat.yml read once for the tests that all ask (no caller changes the dict)
def data_package_names(path=DATA):
    """{name or template: where in the data} for every package name data/compat.yml defines."""
    out = {}
    _walk(yaml.safe_load(path.read_text()), "", False, out)
    return out


def _pattern(name):
    """A regex for a name or a template ({branch}, {server}, ... and * globs); None when too vague to look for."""
    literal = re.split(r"[{*]", name)[0]
    if len(literal) < 6:
        return None
    parts = []
    for piece in re.split(r"(\{\w+\}|\*)", name):
        if piece == "*":
            parts.append(r"[a-z0-9.+-]*")
        elif piece.startswith("{"):
            parts.append(r"\d+" if piece[1:-1] in _PLACEHOLDER_DIGITS else r"[a-z0-9.+-]*")
        else:
            parts.append(re.escape(piece))
    return re.compile(r"(?<![\w.+/-])" + "".join(parts) + r"(?![\w+-])")


def _role_files():
    for role in sorted(p for p in (ROOT / "roles").iterdir() if p.is_dir()):
        for sub in ("tasks", "vars"):
            for path in sorted((role / sub).rglob("*.y*ml")) if (role / sub).is_dir() else []:
                yield role.name, path


_TITLE = re.compile(r"^\s*- name:\s+[^\[{\s][^:]*\s")  # a task's title: a sentence
_MESSAGE = re.compile(r"^(\s*)-?\s*(msg|fail_msg|success_msg):")


def _code_lines(path):
    """(number, line) of the lines that are code: not comments, task titles or messages (prose, which may name
    a package as documentation does)."""
    message_indent = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        indent = len(line) - len(line.lstrip())
        if message_indent is not None:
            if line.strip() and indent <= message_indent:
                message_indent = None
            else:
                continue
        if line.lstrip().startswith("#") or _TITLE.match(line):
            continue
        message = _MESSAGE.match(line)
        if message:
            message_indent = len(message.group(1))
            continue
        yield number, line


# Reading a file under data/: a lookup/query of a file-like plugin with data/ in its arguments, a path built from
# role_path/playbook_dir up to data/, include_vars or a src/file/path key that names data/.
_READS_DATA = [
    re.compile(r"""(lookup|query|q)\(\s*['"](ansible\.builtin\.)?(file|template|fileglob|first_found|lines|pipe|unvault)['"][^)]*\bdata/"""),
    re.compile(r"""(role_path|playbook_dir|inventory_dir)[^}]*/\.\./(\.\./)*data\b"""),
    re.compile(r"""^\s*-?\s*(src|file|path|dir|include_vars|ansible\.builtin\.include_vars)\s*:\s*\S*\bdata/"""),
]


def data_reads(files):
    return ["%s:%d: %s" % (path.relative_to(ROOT), number, line.strip())
            for _role, path in files for number, line in _code_lines(path)
            if any(p.search(line) for p in _READS_DATA)]


def package_names_spelled(files, names):
    patterns = {name: _pattern(name) for name in names if name not in ALLOWED}
    found = []
    for role, path in files:
        if role in KNOWN_EXCEPTIONS:
            continue
        where = str(path.relative_to(ROOT))
        for number, line in _code_lines(path):
            if any(where == file and allowed.match(line) for file, allowed, _why in ALLOWED_LINES):
                continue
            for name, pattern in patterns.items():
                if pattern is not None and pattern.search(line):
                    found.append("%s:%d: %s (data/compat.yml %s)" % (where, number, name, names[name]))
    return found


def test_the_package_list_is_derived_from_the_data():
    names = data_package_names()
    for expected in ("libnccl2", "nvidia-container-toolkit", "libcudnn9-cuda-{cuda_major}", "cuda-toolkit-{major}-{minor}",
                     "nvidia-open-kernel-dkms", "nvidia-fabricmanager-{branch}"):
        assert expected in names, expected
    assert not {"pinning", "versioned", "contrib", "distro", "nvidia_repo"} & set(names)
    assert _pattern("libcudnn9-dev-cuda-{cuda_major}").search("apt install libcudnn9-dev-cuda-12")
    assert not _pattern("libnccl2").search("/var/lib/libnccl2-cache")
    assert _pattern("cuda-*-{major}-{minor}") is None  # too vague to look for


def test_no_role_reads_a_file_under_data():
    assert data_reads(list(_role_files())) == []


def test_no_role_spells_a_package_name_of_the_data():
    assert package_names_spelled(list(_role_files()), data_package_names()) == []


@pytest.mark.parametrize("line, kind", [
    ("    x: \"{{ lookup('ansible.builtin.file', role_path ~ '/../../data/compat.yml') | from_yaml }}\"", "read"),
    ("  ansible.builtin.include_vars: ../../data/compat.yml", "read"),
    ("      name: [libnccl2, libnccl-dev]", "name"),
    ("    __x: ['nvidia-container-toolkit', 'libnvidia-container1']", "name"),
    ("      name: nvidia-driver-580-server-open", "name"),
    ("    fail_msg: >-\n      a message may name libnccl2\n    quiet: true\n  ansible.builtin.apt:\n    name: libcudnn8", "name"),
])
def test_the_checks_catch_a_break(tmp_path, line, kind):
    """The checks above cannot pass vacuously: each kind of break is caught in a file that holds it."""
    role = tmp_path / "roles" / "demo" / "tasks"
    role.mkdir(parents=True)
    path = role / "main.yml"
    path.write_text("---\n# data/compat.yml is where the names live (a comment may say so)\n- name: x\n" + line + "\n")
    files = [("demo", path)]
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        if kind == "read":
            assert len(data_reads(files)) == 1
        else:
            found = package_names_spelled(files, data_package_names())
            assert found and all("libnccl2" not in f for f in found if "may name" in line), found
    finally:
        ROOT = saved
