# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CI image's recipe rendered without Docker: playbooks/ci_image_args.yml's build arguments (its template, through
Ansible's own templating) fed into examples/Dockerfile's ARG, ENV and LABEL lines, stage by stage as Docker expands them,
give the environment and the labels of the final image; examples/Dockerfile.dockerignore's patterns as Docker matches
them give what the build context sends. tests/integration/test_ci_image.py builds the images (make test-heavy)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.dlbox.stack.plugins.plugin_utils.ci_image import decide, linker
from ansible_collections.dlbox.stack.plugins.plugin_utils.role_plan import load_data, resolve

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "examples" / "Dockerfile"
DOCKERIGNORE = ROOT / "examples" / "Dockerfile.dockerignore"
ARGS_PLAYBOOK = ROOT / "playbooks" / "ci_image_args.yml"
CI_PLAYBOOK = ROOT / "playbooks" / "ci_image.yml"
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"   # debian:12's PATH (its image config)
HW = {"gpus": ["H100 SXM", "H100 SXM"], "os": "debian-12", "arch": "x86_64", "driver_version": "580.95.05"}
IDENTITY = {"version": "0.1.0", "source": "https://github.com/dlbox/dlbox.stack", "revision": "ab" * 20,
            "created": "2026-12-05T00:00:00Z"}


# ---- examples/Dockerfile, expanded as Docker does for ARG, ENV and LABEL ------------------------------------------

def _instructions(text):
    """(keyword, rest) of each instruction: comment lines dropped (also inside a continuation), continuations joined."""
    out, current = [], ""
    for line in text.splitlines():
        if line.strip().startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip():
            keyword, _blank, rest = current.strip().partition(" ")
            out.append((keyword.upper(), rest.strip()))
        current = ""
    return out


def _expand(text, scope):
    """${NAME} and $NAME from scope; an unset one is empty, as in Docker."""
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)",
                  lambda m: scope.get(m.group(1) or m.group(2), ""), text)


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _words(rest, scope):
    """Docker's word processing of ARG, ENV and LABEL: blanks split words outside quotes, quotes and backslashes go,
    variables are replaced outside single quotes, and what replaces them is taken as it is (its quotes stay)."""
    words, word, started, quote, i = [], "", False, None, 0
    while i < len(rest):
        char = rest[i]
        if quote is None and char.isspace():
            if started:
                words.append(word)
            word, started, i = "", False, i + 1
            continue
        started = True
        if char == "\\" and quote != "'" and i + 1 < len(rest):
            word, i = word + rest[i + 1], i + 2
        elif char in "'\"" and quote in (None, char):
            quote, i = (None if quote else char), i + 1
        elif char == "$" and quote != "'" and _VARIABLE.match(rest, i):
            match = _VARIABLE.match(rest, i)
            word, i = word + scope.get(match.group(1) or match.group(2), ""), match.end()
        else:
            word, i = word + char, i + 1
    if started:
        words.append(word)
    return words


def _pairs(rest, scope):
    return [(word.partition("=")[0], word.partition("=")[2], "=" in word) for word in _words(rest, scope)]


def _stages(text):
    """Global ARG lines and the stages: name -> {"from": ..., "lines": [(keyword, rest), ...]}, in order."""
    globals_, stages, current = [], {}, None
    for keyword, rest in _instructions(text):
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) > 2 and words[1].upper() == "AS" else "stage%d" % len(stages)
            current = stages[name] = {"from": words[0], "lines": []}
        elif current is None:
            globals_.append((keyword, rest))
        else:
            current["lines"].append((keyword, rest))
    return globals_, stages


def render(build_args, base_env=None):
    """The final image's (env, labels) for these build arguments (what `docker image inspect` would show)."""
    globals_, stages = _stages(DOCKERFILE.read_text(encoding="utf-8"))
    global_args = {}
    for keyword, rest in globals_:
        assert keyword == "ARG"
        for key, value, _given in _pairs(rest, global_args):
            global_args[key] = build_args.get(key, value)
    chain, name = [], list(stages)[-1]
    while name in stages:             # the final stage, then the one it is built FROM, down to the base image
        chain.append(name)
        name = _expand(stages[name]["from"], global_args)
    env, labels = dict(base_env or {"PATH": BASE_PATH}), {}
    for name in reversed(chain):
        args = {}
        for keyword, rest in stages[name]["lines"]:
            scope = dict(args, **env)          # ENV wins over an ARG of the same name
            if keyword == "ARG":
                for key, value, given in _pairs(rest, scope):
                    if key in build_args:
                        args[key] = build_args[key]
                    else:
                        args[key] = value if given else global_args.get(key, "")
            elif keyword == "ENV":
                env.update((key, value) for key, value, _given in _pairs(rest, scope))
            elif keyword == "LABEL":
                labels.update((key, value) for key, value, _given in _pairs(rest, scope))
    return env, labels


# ---- playbooks/ci_image_args.yml's build arguments, through Ansible's templating --------------------------------------

def ci_args(plan, ci):
    """The KEY=VALUE lines the playbook writes for this plan and decision (its template rendered as Ansible does)."""
    plays = yaml.safe_load(ARGS_PLAYBOOK.read_text(encoding="utf-8"))
    (task,) = [t for play in plays for t in play.get("tasks") or [] if t["name"] == "Write the build arguments on the controller"]
    text = Templar(loader=DataLoader(), variables={"dlbox_plan": plan, "__ci": ci}).template(
        trust_as_template(task["ansible.builtin.copy"]["content"]))
    return dict(line.split("=", 1) for line in text.splitlines() if line)


@pytest.fixture(scope="module")
def plan():
    return resolve({}, {"cuda": "13.0", "cudnn": "9.20.0.48", "pytorch": "2.13"}, hardware=HW)


@pytest.fixture(scope="module")
def data():
    return load_data()


def _decided(plan, data, flavour="runtime", compat=False, identity=None, system=True):
    ci = decide(plan, data, flavour=flavour, archs=["9.0"], compat=compat, system=system)
    assert ci["ok"], ci["errors"]
    ci["identity"] = dict(IDENTITY if identity is None else identity)
    return ci


def _image(plan, data, flavour="runtime", compat=False, identity=None, drop=()):
    args = ci_args(plan, _decided(plan, data, flavour, compat, identity))
    for key in drop:
        args.pop(key)
    args.update(DLBOX_CI_CUDA=flavour, DLBOX_PLAN="{}")
    return args, render(args)


def test_the_args_file_has_every_argument_the_image_says(plan, data):
    args = ci_args(plan, _decided(plan, data))
    assert args["DLBOX_CUDA"] == "13.0"
    assert args["DLBOX_NVIDIA_REQUIRE_CUDA"] == "cuda>=13.0"
    assert (args["DLBOX_VERSION"], args["DLBOX_SOURCE"], args["DLBOX_CREATED"], args["DLBOX_REVISION"]) == (
        IDENTITY["version"], IDENTITY["source"], IDENTITY["created"], IDENTITY["revision"])
    # an unknown revision (an installed collection) is not written, so no empty value is handed on
    assert "DLBOX_REVISION" not in ci_args(plan, _decided(plan, data, identity=dict(IDENTITY, revision=None)))


def test_the_runtime_image_requires_its_cuda_and_keeps_the_base_path(plan, data):
    _args, (env, _labels) = _image(plan, data)
    assert env["NVIDIA_REQUIRE_CUDA"] == "cuda>=13.0"          # no cuda-compat in the image: no brand clause
    assert (env["NVIDIA_VISIBLE_DEVICES"], env["NVIDIA_DRIVER_CAPABILITIES"]) == ("all", "compute,utility")
    # no CUDA bin folder in a runtime image; /usr/local/nvidia/bin in front, as in NVIDIA's base images (issue 51 M4)
    assert env["PATH"] == "/usr/local/nvidia/bin:" + BASE_PATH
    assert env["CUDA_VERSION"] == "13.0"
    assert "CUDA_HOME" not in env and "LIBRARY_PATH" not in env
    assert (env["TORCH_CUDA_ARCH_LIST"], env["CUDAARCHS"]) == ("9.0", "90")


@pytest.mark.parametrize("cuda", ["13.0", "12.9"])
def test_the_toolkit_path_and_cuda_home_follow_the_cuda_version(plan, data, cuda):
    args, _rendered = _image(plan, data, flavour="toolkit")
    env, _labels = render(dict(args, DLBOX_CUDA=cuda))
    # in front of the base image's own PATH, and NVIDIA's /usr/local/nvidia/bin in front of it, as NVIDIA orders them
    assert env["PATH"] == "/usr/local/nvidia/bin:/usr/local/cuda-%s/bin:%s" % (cuda, BASE_PATH)
    assert env["CUDA_VERSION"] == cuda
    assert env["CUDA_HOME"] == "/usr/local/cuda-%s" % cuda
    # NVIDIA's devel images: ENV LIBRARY_PATH /usr/local/cuda/lib64/stubs (link -lcuda without a driver)
    assert env["LIBRARY_PATH"] == "/usr/local/cuda-%s/lib64/stubs" % cuda
    # a base image with its own PATH keeps it
    env, _labels = render(dict(args, DLBOX_CUDA=cuda), base_env={"PATH": "/opt/conda/bin:/usr/bin:/bin"})
    assert env["PATH"] == "/usr/local/nvidia/bin:/usr/local/cuda-%s/bin:/opt/conda/bin:/usr/bin:/bin" % cuda


def test_nvidia_require_cuda_defaults_to_the_cuda_and_carries_the_brand_clauses_with_cuda_compat(plan, data):
    # without DLBOX_NVIDIA_REQUIRE_CUDA (a build without the args file): "cuda>=X.Y" from DLBOX_CUDA
    _args, (env, _labels) = _image(plan, data, drop=("DLBOX_NVIDIA_REQUIRE_CUDA",))
    assert env["NVIDIA_REQUIRE_CUDA"] == "cuda>=13.0"
    # an image with cuda-compat: NVIDIA's clauses for CUDA 13.0 reach the ENV line whole (spaces, commas, < and >)
    args, (env, _labels) = _image(plan, data, compat=True)
    assert env["NVIDIA_REQUIRE_CUDA"] == args["DLBOX_NVIDIA_REQUIRE_CUDA"]
    assert env["NVIDIA_REQUIRE_CUDA"].startswith("cuda>=13.0 brand=unknown,driver>=535,driver<536 ")
    assert "brand=tesla,driver>=575,driver<576" in env["NVIDIA_REQUIRE_CUDA"].split()


def test_the_oci_labels_carry_version_source_created_and_revision(plan, data):
    _args, (_env, labels) = _image(plan, data)
    assert labels["org.opencontainers.image.version"] == IDENTITY["version"]
    assert labels["org.opencontainers.image.source"] == IDENTITY["source"]
    assert labels["org.opencontainers.image.created"] == IDENTITY["created"]
    assert labels["org.opencontainers.image.revision"] == IDENTITY["revision"]
    assert labels["org.dlbox.stack"] == decide(plan, load_data(), archs=["9.0"], system=True)["label"]


def test_the_cuda_layer_checks_nvidia_require_cuda_against_the_plan():
    """The cuda layer's RUN hands DLBOX_NVIDIA_REQUIRE_CUDA to the playbook (dlbox_ci_image_env), which refuses another."""
    _globals, stages = _stages(DOCKERFILE.read_text(encoding="utf-8"))
    (run,) = [rest for keyword, rest in stages["cuda"]["lines"] if keyword == "RUN"]
    assert '\\"nvidia_require_cuda\\": \\"$DLBOX_NVIDIA_REQUIRE_CUDA\\"' in run
    assert [rest for keyword, rest in stages["cuda"]["lines"] if keyword == "ARG" and "DLBOX_NVIDIA_REQUIRE_CUDA" in rest]


def test_the_cuda_layer_holds_cublas_and_nccl():
    plays = yaml.safe_load(CI_PLAYBOOK.read_text(encoding="utf-8"))
    tasks = [t for play in plays for t in play.get("tasks") or []]
    (hold,) = [t for t in tasks if "ansible.builtin.dpkg_selections" in t]
    assert hold["ansible.builtin.dpkg_selections"] == {"name": "{{ item }}", "selection": "hold"}
    assert hold["loop"] == "{{ __ci.hold }}" and hold["when"] == "__ci_cuda_layer"
    names = [t.get("name") for t in tasks]
    # after NCCL's install (what it holds is installed by then), in the cuda layer
    assert names.index(hold["name"]) > names.index("NCCL of the plan (stack.nccl), without nccl.conf")
    assert names.index(hold["name"]) < names.index("Framework environments of the plan")


def test_the_fixture_repository_has_what_the_image_installs_and_holds(plan, data):
    """tests/integration/test_ci_image.py builds on the FIXTURE CUDA repository: each package the runtime image installs
    from the runtime set and each one it holds (both flavours) must be there, or that build fails at apt."""
    sys.path.insert(0, str(ROOT / "tests" / "aptrepo"))
    import build_repo  # pylint: disable=import-outside-toplevel,import-error
    spec = build_repo.normalise_spec(build_repo.load_spec(ROOT / "tests" / "aptrepo" / "specs" / "cuda-debian12.yml"))
    names = {p["name"] for p in build_repo.resolve_packages(spec)}
    wanted = set(decide(plan, data, archs=["9.0"], system=True)["runtime"]["packages"]) | set(
        decide(plan, data, flavour="toolkit", archs=["9.0"])["hold"])
    assert "cuda-nvtx-13-0" in wanted and wanted <= names, sorted(wanted - names)


def _ci_tasks():
    plays = yaml.safe_load(CI_PLAYBOOK.read_text(encoding="utf-8"))
    return [t for play in plays for t in play.get("tasks") or []]


@pytest.mark.parametrize("compat", [False, True])
def test_the_library_path_is_the_toolkits_targets_folder_and_never_the_compat_folder(plan, data, compat):
    """The ld.so.conf.d file the playbook writes (its template through Ansible's templating) and the image's ENV: the
    plan's CUDA libraries; the forward-compatibility folder on neither (NVIDIA's images leave it to the container
    toolkit, which adds it only under an older host driver)."""
    (task,) = [t for t in _ci_tasks() if (t.get("ansible.builtin.copy") or {}).get("dest") == "/etc/ld.so.conf.d/dlbox-ci-cuda.conf"]
    ci = decide(plan, data, archs=["9.0"], compat=compat, machine="x86_64", system=True)
    text = Templar(loader=DataLoader(), variables={"dlbox_plan": plan, "__ci": ci}).template(
        trust_as_template(task["ansible.builtin.copy"]["content"]))
    paths = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert paths == ["/usr/local/cuda-13.0/targets/x86_64-linux/lib"]
    assert "compat" not in text.replace("ci_image", "")
    _args, (env, _labels) = _image(plan, data, compat=compat)
    # LD_LIBRARY_PATH as NVIDIA's base images set it: only where a GPU device plugin without the container toolkit mounts
    # the driver (GKE: /usr/local/nvidia/lib64); never the CUDA libraries, never the compat folder
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib:/usr/local/nvidia/lib64"


def test_with_cuda_compat_the_cuda_layer_checks_what_the_container_toolkit_will_find():
    tasks = _ci_tasks()
    names = [t.get("name") for t in tasks]
    (check,) = [t for t in tasks if t.get("name", "").startswith("Forward compatibility - check")]
    assert check["when"] == "__ci_cuda_layer and __ci.parts.cuda and __ci.linker.compat is not none"
    that = check["ansible.builtin.assert"]["that"]
    assert "__ci_compat_seen.stdout | default('') == __ci.linker.compat.dir" in that   # /usr/local/cuda/compat -> the plan's
    assert "__ci_compat_lib.matched == 1" in that                                        # one regular libcuda.so.<driver>
    assert "__ci_compat_static.stdout_lines | length == 0" in that                       # on no static path
    (find,) = [t for t in tasks if "ansible.builtin.find" in t]
    assert find["ansible.builtin.find"]["file_type"] == "file"        # the toolkit counts regular files, not the links
    # after the runtime set (cuda-compat-X-Y) is installed, in the cuda layer
    assert names.index(check["name"]) > names.index("Runtime only - install the plan's CUDA runtime libraries (no compiler, header or stub)")
    assert names.index(check["name"]) < names.index("Framework environments of the plan")


# ---- the FIXTURE CUDA repository's packages, laid out as dpkg lays them (tests/aptrepo/specs/_cuda-common.yml) ----------

def _fixture_packages():
    sys.path.insert(0, str(ROOT / "tests" / "aptrepo"))
    import build_repo  # pylint: disable=import-outside-toplevel,import-error
    spec = build_repo.normalise_spec(build_repo.load_spec(ROOT / "tests" / "aptrepo" / "specs" / "cuda-debian12.yml"))
    return {(p["name"], p["version"]): p for p in build_repo.resolve_packages(spec)}


def lay(root, names, packages=None):
    """The files of these FIXTURE packages (name or (name, version)) under ``root``, as dpkg unpacks them: links shared
    by several packages (lib64, include) laid once."""
    packages = packages or _fixture_packages()
    for name in names:
        (pkg,) = [p for key, p in packages.items() if name in (key, key[0])]
        for entry in pkg["files"]:
            target = root / entry["path"].lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if "symlink" in entry:
                if not target.is_symlink():
                    target.symlink_to(entry["symlink"])
                assert os.readlink(target) == entry["symlink"], entry
            else:
                target.write_bytes(entry["data"] if "data" in entry else entry["content"].encode())


def _compat_root(root, case):
    """An image's /usr/local as the FIXTURE cuda-compat-13-0 (NVIDIA's file list) and config-common lay it, broken as
    ``case`` says."""
    home = root / "usr/local/cuda-13.0"
    compat = home / "compat"
    compat.mkdir(parents=True)
    if case != "no-library":
        lay(root, ["cuda-compat-13-0"])
    if case == "two-libraries":
        (compat / "libcuda.so.575.57.08").write_text("FIXTURE\n", encoding="utf-8")
    (root / "usr/local/cuda-12.4/compat").mkdir(parents=True)
    (root / "usr/local/cuda").symlink_to(root / ("usr/local/cuda-12.4" if case == "other-toolkit" else "usr/local/cuda-13.0"))
    (root / "etc/ld.so.conf.d").mkdir(parents=True)
    (root / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n", encoding="utf-8")
    if case == "static-path":
        (root / "etc/ld.so.conf.d/cuda-compat.conf").write_text("%s\n" % compat, encoding="utf-8")


def test_the_compat_check_passes_only_where_the_container_toolkit_would_use_it(tmp_path, data):
    """The playbook's forward-compatibility tasks, run by Ansible on laid-out image roots (one host each): they pass on
    the layout NVIDIA's toolkit uses and refuse a second driver library, none, /usr/local/cuda at another toolkit, and
    the folder on a static library path."""
    cases = ["good", "two-libraries", "no-library", "other-toolkit", "static-path"]
    tasks = [t for t in _ci_tasks() if t.get("name", "").startswith("Forward compatibility - ")]
    assert len(tasks) == 4
    compat = linker(data, "13.0", compat=True)["compat"]
    hostvars = {}
    for case in cases:
        root = tmp_path / case
        _compat_root(root, case)
        hostvars[case] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                          "__ci_cuda_layer": True,
                          "__ci": {"parts": {"cuda": True},
                                   "linker": {"compat": {"dir": str(root) + compat["dir"],
                                                         "seen_as": str(root) + compat["seen_as"],
                                                         "library": compat["library"]}}},
                          "__root": str(root)}
    # the static-path task reads this root's ld.so.conf files, not the machine's
    (grep_task,) = [t for t in tasks if "grep" in ((t.get("ansible.builtin.command") or {}).get("argv") or [])]
    grep_task["ansible.builtin.command"]["argv"] = [
        "{{ __root }}" + a if str(a).startswith("/etc/ld.so.conf") else a for a in grep_task["ansible.builtin.command"]["argv"]]
    playbook = tmp_path / "compat.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "tasks": tasks}]), encoding="utf-8")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hostvars}}), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="5",
               ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    out = json.loads(proc.stdout[proc.stdout.index("{"):])
    failed = {host: [t["task"]["name"] for t in out["plays"][0]["tasks"] if t["hosts"].get(host, {}).get("failed")]
              for host in cases}
    check = "Forward compatibility - check that the toolkit will find it, and only it will put it on the path"
    assert failed == {"good": [], "two-libraries": [check], "no-library": [check], "other-toolkit": [check],
                      "static-path": [check]}, proc.stdout[-3000:]


def _compiler():
    """gcc, or the reason the test cannot run: a missing compiler fails where the suite runs (root, CI)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        if os.geteuid() == 0 or os.environ.get("CI"):
            pytest.fail("gcc is needed to link against the FIXTURE driver stub")
        pytest.skip("gcc is needed to link against the FIXTURE driver stub")
    return gcc


PROGRAM = """#include <stdio.h>
int cuDriverGetVersion(int *version);
int main(void) { int v = 0; int rc = cuDriverGetVersion(&v); printf("%d %d\\n", rc, v); return rc; }
"""


def test_a_build_in_the_fixture_toolkit_links_against_the_driver_stub_as_with_nvidias(plan, data, tmp_path):
    """The toolkit flavour's LIBRARY_PATH (the Dockerfile's ENV line) on the FIXTURE toolkit's files as dpkg lays them:
    lib64/stubs is reached through the lib64 link NVIDIA's packages ship, gcc links -lcuda with no driver, the program
    needs libcuda.so.1 (the stub's soname), never loads the stub, fails to start without a driver and gets the
    driver API of cuda-compat-13-0's libcuda where the NVIDIA Container Toolkit would put that folder on the path."""
    gcc = _compiler()
    root = tmp_path / "image"
    lay(root, ["cuda-cudart-13-0", "cuda-cudart-dev-13-0", "cuda-driver-dev-13-0", "cuda-nvml-dev-13-0", "cuda-compat-13-0"])
    assert os.readlink(root / "usr/local/cuda-13.0/lib64") == "targets/x86_64-linux/lib"
    _args, (env, _labels) = _image(plan, data, flavour="toolkit")
    stubs = str(root) + env["LIBRARY_PATH"]
    (tmp_path / "t.c").write_text(PROGRAM, encoding="utf-8")
    plain = {k: v for k, v in os.environ.items() if k not in ("LIBRARY_PATH", "LD_LIBRARY_PATH")}

    def run(argv, **extra):
        return subprocess.run(argv, capture_output=True, text=True, env=dict(plain, LC_ALL="C", **extra), timeout=60,
                              check=False)

    unlinked = run([gcc, str(tmp_path / "t.c"), "-lcuda", "-o", str(tmp_path / "t0")])
    assert unlinked.returncode != 0 and "cannot find -lcuda" in unlinked.stderr      # no driver, no stub: no link
    linked = run([gcc, str(tmp_path / "t.c"), "-lcuda", "-o", str(tmp_path / "t")], LIBRARY_PATH=stubs)
    assert linked.returncode == 0, linked.stderr
    needed = run(["readelf", "-d", str(tmp_path / "t")]).stdout
    assert "Shared library: [libcuda.so.1]" in needed and "stubs" not in needed
    for where in ({}, {"LD_LIBRARY_PATH": stubs}):         # no driver; the stub is never loaded under its own name
        started = run([str(tmp_path / "t")], **where)
        assert started.returncode == 127 and "libcuda.so.1: cannot open shared object file" in started.stderr, started
    compat = run([str(tmp_path / "t")], LD_LIBRARY_PATH=str(root / "usr/local/cuda-13.0/compat"))
    assert (compat.returncode, compat.stdout) == (0, "0 13000\n"), compat
    # and the stub itself, called by a program that loads it anyway, says it is one (CUDA_ERROR_STUB_LIBRARY)
    probe = subprocess.run([sys.executable, "-c", "import ctypes, sys; v = ctypes.c_int(7); lib = ctypes.CDLL(sys.argv[1]); "
                            "print(lib.cuDriverGetVersion(ctypes.byref(v)), v.value)", stubs + "/libcuda.so"],
                           capture_output=True, text=True, timeout=60, check=True)
    assert probe.stdout == "34 7\n"


# ---- the two playbook layers: each shared step written once (playbooks/files/dlbox-ci-layer.sh) ---------------------

LAYER_SCRIPT = ROOT / "playbooks" / "files" / "dlbox-ci-layer.sh"
# every absolute path the layers' RUNs and the shared script touch, moved under a test root when they are run here
_BUILD_PATHS = ("/run/secrets", "/etc/apt/apt.conf.d", "/tmp/docker-clean", "/tmp/dlbox-ci-apt.conf", "/tmp/dlbox-ansible", "/root/.ansible",
                "/opt/dlbox-ansible", "/opt/dlbox-collection", "/srv/dlbox-context")
_STUB = """#!%s
import json, os, sys
root = os.environ["DLBOX_TEST_ROOT"]
keys = ["ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_INJECT_FACT_VARS", "ANSIBLE_NOCOLOR", "ANSIBLE_LOCAL_TEMP", "ANSIBLE_HOME",
        "DLBOX_STACK_CACHE_DIR", "PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "APT_CONFIG", "PIP_CONFIG_FILE",
        "PIP_INDEX_URL"]
apt_config = os.environ.get("APT_CONFIG")
record = {"tool": os.path.basename(sys.argv[0]), "argv": [a.replace(root, "") for a in sys.argv[1:]],
          "env": {k: os.environ[k].replace(root, "") for k in keys if k in os.environ},
          "apt_config": open(apt_config, encoding="utf-8").read().replace(root, "") if apt_config else None,
          "docker_clean_set_aside": not os.path.exists(root + "/etc/apt/apt.conf.d/docker-clean")}
with open(root + "/calls.jsonl", "a", encoding="utf-8") as out:
    out.write(json.dumps(record) + "\\n")
"""


def _moved(text, root):
    for path in _BUILD_PATHS:
        text = text.replace(path, str(root) + path)
    return text


def _run_text(rest):
    """A RUN's shell command: its --mount flags dropped."""
    words = rest.split(" ")
    while words and (words[0].startswith("--mount=") or not words[0]):
        words.pop(0)
    return " ".join(words)


def _playbook_runs(stages, stage):
    """The RUNs of a stage that mount Ansible and the collection (the playbook layers)."""
    return [r for keyword, r in stages[stage]["lines"] if keyword == "RUN" and "from=collection" in r]


def run_layer(dockerfile_text, stage, env, root, layer_script=LAYER_SCRIPT, ca_bundle="FIXTURE CA\n", pip_conf=""):
    """Run one playbook stage's RUN as the build would, with ansible-playbook and apt-get stubbed: the calls made, each
    with its arguments and environment, and whether Debian's docker-clean was set aside and put back."""
    _globals, stages = _stages(dockerfile_text)
    (rest,) = _playbook_runs(stages, stage)
    bin_dir = root / "stubs"
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir(parents=True, exist_ok=True)
    (root / "opt/dlbox-ansible/bin").mkdir(parents=True, exist_ok=True)
    for path in (root / "opt/dlbox-ansible/bin/ansible-playbook", bin_dir / "apt-get"):
        path.write_text(_STUB % sys.executable, encoding="utf-8")
        path.chmod(0o755)
    (bin_dir / "apt_pkg.py").write_text("", encoding="utf-8")     # python3-apt, as the base image has it after the cuda layer
    (root / "opt/dlbox-collection").mkdir(parents=True, exist_ok=True)
    if layer_script is not None:
        (root / "opt/dlbox-collection/dlbox-ci-layer.sh").write_text(
            _moved(layer_script.read_text(encoding="utf-8"), root), encoding="utf-8")
    (root / "etc/apt/apt.conf.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/apt/apt.conf.d/docker-clean").write_text("DPkg::Post-Invoke {};\n", encoding="utf-8")
    (root / "run/secrets").mkdir(parents=True, exist_ok=True)
    (root / "run/secrets/ca_bundle").write_text(ca_bundle, encoding="utf-8")  # BuildKit mounts an empty file without it
    (root / "run/secrets/pip_conf").write_text(pip_conf, encoding="utf-8")
    full_env = {"PATH": "%s:/usr/bin:/bin" % bin_dir, "PYTHONPATH": str(bin_dir), "DLBOX_TEST_ROOT": str(root)}
    full_env.update(env)
    proc = subprocess.run(["/bin/sh", "-c", _moved(_run_text(rest), root)], env=full_env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    calls = [json.loads(line) for line in (root / "calls.jsonl").read_text(encoding="utf-8").splitlines()]
    assert (root / "etc/apt/apt.conf.d/docker-clean").exists()          # put back when the RUN ends
    assert not (root / "tmp/dlbox-ci-apt.conf").exists()                # apt's CA setting is in no layer
    return calls


_LAYER_ENV = {"DLBOX_PLAN": '{"dlbox_plan_hardware": {"gpus": ["H100 SXM"]}, "dlbox_plan_request": {"cuda": "13.0"}}',
              "DLBOX_CI_CUDA": "runtime", "DLBOX_CUDA": "13.0", "DLBOX_NVIDIA_REQUIRE_CUDA": "cuda>=13.0",
              "DLBOX_CUDA_ARCHS": "8.0;9.0", "DLBOX_CUDAARCHS": "80;90"}
_PLAYBOOK = ["-c", "local", "-i", "localhost,", "-e", "ansible_python_interpreter=/usr/bin/python3", "dlbox.stack.ci_image"]
_ANSIBLE_ENV = {"ANSIBLE_COLLECTIONS_PATH": "/opt/dlbox-collection/collections", "ANSIBLE_INJECT_FACT_VARS": "false",
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": "/tmp/dlbox-ansible", "ANSIBLE_HOME": "/tmp/dlbox-ansible",
                "DLBOX_STACK_CACHE_DIR": "/tmp/dlbox-ansible/data-cache", "PIP_CERT": "/run/secrets/ca_bundle",
                "SSL_CERT_FILE": "/run/secrets/ca_bundle", "REQUESTS_CA_BUNDLE": "/run/secrets/ca_bundle",
                "APT_CONFIG": "/tmp/dlbox-ci-apt.conf"}
# apt's https method reads the lab's CA from Acquire::https::CAInfo, not from the variables above (issue 51 red team)
_APT_CA = 'Acquire::https::CAInfo "/run/secrets/ca_bundle";\n'


def test_the_cuda_layer_runs_the_playbook_with_the_plan_the_site_and_its_own_vars(tmp_path):
    (call,) = run_layer(DOCKERFILE.read_text(encoding="utf-8"), "cuda", _LAYER_ENV, tmp_path)
    assert call["tool"] == "ansible-playbook" and call["env"] == _ANSIBLE_ENV and call["docker_clean_set_aside"]
    assert call["apt_config"] == _APT_CA


def test_without_the_ca_secret_apt_and_pip_keep_their_own_trust(tmp_path):
    (call,) = run_layer(DOCKERFILE.read_text(encoding="utf-8"), "cuda", _LAYER_ENV, tmp_path, ca_bundle="")
    assert call["apt_config"] is None
    assert not set(call["env"]) & {"APT_CONFIG", "PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"}
    assert call["argv"][:len(_PLAYBOOK)] == _PLAYBOOK
    assert call["argv"][len(_PLAYBOOK):-1] == ["-e", _LAYER_ENV["DLBOX_PLAN"], "-e", "@/opt/dlbox-collection/site-vars.yml",
                                               "-e"]
    assert json.loads(call["argv"][-1]) == {
        "dlbox_ci_layer": "cuda", "dlbox_ci_build_caches": True, "dlbox_ci_cuda": "runtime", "dlbox_ci_cuda_archs": ["8.0", "9.0"],
        "dlbox_ci_image_env": {"cuda": "13.0", "nvidia_require_cuda": "cuda>=13.0", "torch_cuda_arch_list": "8.0;9.0",
                               "cudaarchs": "80;90"}}


@pytest.mark.parametrize("framework_vars", ["", "ci-frameworks.yml"])
def test_the_frameworks_layer_adds_the_framework_pins_and_vars_file_and_checks_the_label(tmp_path, framework_vars):
    stack = '{"cuda":"13.0","cudnn":"9.20.0.48"}'
    env = dict(_LAYER_ENV, DLBOX_FRAMEWORKS='{"pytorch": "2.13"}', DLBOX_FRAMEWORK_VARS_FILE=framework_vars, DLBOX_STACK=stack)
    (call,) = run_layer(DOCKERFILE.read_text(encoding="utf-8"), "image", env, tmp_path)
    assert call["tool"] == "ansible-playbook" and call["env"] == _ANSIBLE_ENV and call["docker_clean_set_aside"]
    argv = call["argv"][len(_PLAYBOOK):]
    assert json.loads(argv[1]) == {"dlbox_plan_hardware": {"gpus": ["H100 SXM"]},
                                   "dlbox_plan_request": {"cuda": "13.0", "pytorch": "2.13"}}
    vars_files = ["-e", "@/srv/dlbox-context/ci-frameworks.yml"] if framework_vars else []
    assert [argv[0]] + argv[2:-1] == ["-e", "-e", "@/opt/dlbox-collection/site-vars.yml"] + vars_files + ["-e"]
    assert json.loads(argv[-1])["dlbox_ci_layer"] == "frameworks"
    assert json.loads(argv[-1])["dlbox_ci_image_env"] == {"cuda": "13.0", "torch_cuda_arch_list": "8.0;9.0",
                                                          "cudaarchs": "80;90", "stack": stack}


def _chain(stages, final, build_args):
    chain, name = [], final
    while name in stages:
        chain.append(name)
        name = _expand(stages[name]["from"], build_args)
    return chain


@pytest.mark.parametrize("flavour", ["runtime", "toolkit"])
def test_each_shared_step_is_written_once(flavour):
    """For each flavour, the stages the final image is built from: the two playbook layers each source the shared
    script once and call it once with their own extra vars; no shared step is written out in the Dockerfile again."""
    globals_, stages = _stages(DOCKERFILE.read_text(encoding="utf-8"))
    defaults = {k: v for keyword, rest in globals_ for k, v, _given in _pairs(rest, {})}
    chain = _chain(stages, list(stages)[-1], dict(defaults, DLBOX_CI_CUDA=flavour))
    assert chain == ["stage%d" % (len(stages) - 1), "flavour-" + flavour, "image", "cuda"]
    script = LAYER_SCRIPT.read_text(encoding="utf-8")
    for name in ("cuda", "image"):
        (run,) = _playbook_runs(stages, name)
        command = _run_text(run)
        assert " ".join(command.split()).startswith(". /opt/dlbox-collection/dlbox-ci-layer.sh; dlbox_ci_playbook -e ")
        assert command.count("dlbox_ci_playbook") == 1
    # the stages of the image (the helper stages ansible and collection run before the collection, and so the script,
    # is there: their few lines of CA handling stay their own)
    instructions = " ".join(rest for name in chain for _keyword, rest in stages[name]["lines"])
    for step in ("ansible-playbook", "apt_pkg", "trap ", "-s /run/secrets/ca_bundle", "sys.stdin.read().split",
                 "DLBOX_STACK_CACHE_DIR"):
        assert step not in instructions and script.count(step) == 1, step
    # the collection stage puts the script where both layers mount it
    (collection_run,) = [rest for keyword, rest in stages["collection"]["lines"] if keyword == "RUN"]
    assert "playbooks/files/dlbox-ci-layer.sh" in collection_run and "/opt/dlbox-collection/dlbox-ci-layer.sh" in collection_run


# ---- examples/Dockerfile.dockerignore, matched as Docker matches it -----------------------------------------------

def _pattern(pattern):
    """Docker's dockerignore pattern (Go filepath.Match, and ** for any number of folders) as a regular expression."""
    out, i = "", 0
    pattern = pattern.strip().lstrip("/")
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + "[" + pattern[i + 1:end].replace("^", "\\^", 1 if pattern[i + 1] != "!" else 0).replace("!", "^", 1) + "]", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile("^" + out + "$")


def ignored(path, lines):
    """Whether the context leaves ``path`` out: the last pattern matching it or a folder above it decides."""
    parts = path.split("/")
    result = False
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        regex = _pattern(line[1:] if negated else line)
        if any(regex.match("/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            result = not negated
    return result


IGNORE = DOCKERIGNORE.read_text(encoding="utf-8").splitlines() if DOCKERIGNORE.exists() else []


def test_the_dockerignore_follows_the_dockerfile():
    # BuildKit reads <Dockerfile>.dockerignore beside the Dockerfile: the name must be the Dockerfile's plus .dockerignore
    assert DOCKERIGNORE.name == DOCKERFILE.name + ".dockerignore" and DOCKERIGNORE.exists()
    assert "Dockerfile.dockerignore" in DOCKERFILE.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", [
    "dlbox-stack-0.1.0.tar.gz", "ci-vars.yml", "ci-frameworks.yml", "site/vars.yml",
    "wheelhouse/torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl", "collections/dlbox.stack", "Dockerfile",
])
def test_the_context_keeps_what_the_build_reads(path):
    assert not ignored(path, IGNORE)


@pytest.mark.parametrize("path", [
    ".git/config", "site/.git/HEAD", ".venv/bin/python", "venv/lib/x.py", "tools/__pycache__/a.cpython-311.pyc",
    "lab-ca.pem", "certs/proxy.crt", "secrets/client.key", "keys/id_ed25519", "id_rsa.pub", ".ssh/config",
    ".docker/config.json", ".env", ".env.local", ".netrc", ".pypirc", ".aws/credentials", "build.log", ".cache/pip/x",
    # a private index's pip configuration (the pip_conf secret's file), and the arguments file with the build's time
    # (issue 51 red team, second round, MEDIUM 1)
    "pip.conf", "site/pip.conf", "pip.ini", "ci.args", "args/lab-ci.args",
])
def test_the_context_leaves_out_vcs_caches_and_secrets(path):
    assert ignored(path, IGNORE)


_DOCS = ROOT / "docs" / "ci-images.md"


def test_the_documented_workflow_puts_nothing_changing_or_secret_in_the_context():
    """The arguments file (DLBOX_CREATED: the time) that the Dockerfile's and the docs' workflow writes into the build
    context is left out of it, so that the frameworks layer's bind mount of the context does not change at every
    build; a pip_conf secret is read from a file outside the context or left out of it."""
    texts = {path.name: path.read_text(encoding="utf-8") for path in (DOCKERFILE, _DOCS)}
    for name, text in texts.items():
        outputs = re.findall(r"dlbox_ci_args_output=\$PWD/(\S+)", text)
        assert outputs, name
        for output in outputs:
            assert ignored(output, IGNORE), (name, output)
    sources = {name: re.findall(r"id=pip_conf,src=(\S+?)[`\s]", text) for name, text in texts.items()}
    assert sources[_DOCS.name], sources
    for name, srcs in sources.items():
        for src in srcs:     # outside the context (the client's disk), as the docs show it; and left out anyway
            assert src.startswith(("$HOME/", "/", "~/")) and ignored(src.rsplit("/", 1)[-1], IGNORE), (name, src)


def test_the_pattern_matcher_is_dockers():
    # Docker's own examples (docs.docker.com, .dockerignore file): */temp*, */*/temp*, temp?, **/*.go, !README.md
    lines = ["*/temp*", "*/*/temp*", "temp?", "*.md", "!README.md"]
    assert ignored("somedir/temporary.txt", lines) and ignored("somedir/subdir/temp", lines) and ignored("tempa", lines)
    assert not ignored("temp", lines) and not ignored("a/b/c/temp", lines)
    assert ignored("notes.md", lines) and not ignored("README.md", lines)
    assert ignored("a/b/c.go", ["**/*.go"]) and ignored("c.go", ["**/*.go"])
    assert ignored("x/node_modules/y/z.js", ["**/node_modules"])   # a folder matched leaves its files out


# ---- issue 51 red team HIGH 1: the toolkit flavour's default build on a stock image (no g++ there) ---------------------

def test_the_toolkit_flavour_installs_what_nvcc_compiles_with_before_the_toolkit(plan, data):
    """The cuda role compiles to verify the toolkit (ci_image.yml forces cuda_verify_compile) and refuses a host without a
    g++ before any change: a stock debian:12 / ubuntu:24.04 has none, so build-essential (what NVIDIA's cuda-nvcc-X-Y
    Depends on, data/compat.yml cuda.toolkit_host) is installed first, in the toolkit flavour only."""
    assert decide(plan, data, flavour="toolkit", archs=["9.0"])["toolkit_host"] == ["build-essential"]
    assert decide(plan, data, flavour="runtime", archs=["9.0"])["toolkit_host"] == []
    tasks = _ci_tasks()
    names = [t.get("name") for t in tasks]
    (host,) = [t for t in tasks if (t.get("ansible.builtin.apt") or {}).get("name") == "{{ __ci.toolkit_host }}"]
    assert host["ansible.builtin.apt"]["state"] == "present"
    assert "__ci_cuda == 'toolkit'" in host["when"] and "__ci_cuda_layer" in host["when"]
    (toolkit,) = [t for t in tasks if (t.get("ansible.builtin.include_role") or {}).get("name") == "dlbox.stack.cuda"]
    assert toolkit["vars"]["cuda_verify_compile"] is True
    assert names.index(host["name"]) < names.index(toolkit["name"])


VERIFY = ROOT / "roles" / "cuda" / "files" / "cuda-verify.sh"
# what roles/cuda/files/cuda-verify.sh and the FIXTURE nvcc use besides a compiler
_TOOLS = ("sh", "bash", "sed", "head", "mktemp", "date", "stat", "grep", "sort", "rm", "dirname", "tr", "cat", "env")


@pytest.mark.parametrize("with_gxx", [False, True])
def test_the_fixture_nvcc_compiles_only_with_a_host_compiler(tmp_path, with_gxx):
    """The FIXTURE nvcc (tests/aptrepo/specs/_cuda-common.yml) needs the host g++ as NVIDIA's does, so the heavy test's
    toolkit build, with the verification on as by default, fails without build-essential: the role's real cuda-verify.sh
    on the FIXTURE cuda-nvcc-13-0 as dpkg lays it, with and without a g++ on PATH."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ on this machine (build-essential)")
    root = tmp_path / "image"
    lay(root, ["cuda-nvcc-13-0"])
    nvcc = root / "usr/local/cuda-13.0/bin/nvcc"
    nvcc.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in _TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    if with_gxx:
        for tool in ("g++", "gcc", "cc", "as", "ld", "collect2"):
            if shutil.which(tool):
                (bin_dir / tool).symlink_to(shutil.which(tool))
    proc = subprocess.run(["bash", str(VERIFY), "--nvcc", str(nvcc), "--release", "13.0", "--compile", "yes", "--run", "auto",
                           "--arch=90", "--source", str(tmp_path / "t.cu")],
                          env={"PATH": str(bin_dir), "LC_ALL": "C"}, capture_output=True, text=True, timeout=120, check=False)
    if with_gxx:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "compiled=yes" in proc.stdout and "sass_sm_90=yes" in proc.stdout and "ran=no" in proc.stdout
    else:
        assert proc.returncode == 3, proc.stdout + proc.stderr        # cuda-verify.sh: compile failed
        assert "Failed to preprocess host compiler properties" in proc.stdout


# ---- issue 51 red team HIGH 2: a private index's URL (it may carry a token) is never a build argument ------------------

_SECRETISH = re.compile(r"INDEX_URL|TOKEN|PASSWORD|PIP_CONFIG", re.I)
_PRIVATE = "https://ci:s3cr3t-token@pypi.lab.example/simple"


def test_no_build_argument_or_env_line_carries_an_index_url(plan, data):
    """An ARG's value is recorded in `docker history` (each RUN after it shows it) and an ENV's in the image config:
    neither may name pip's index. Given as build arguments anyway, the URL reaches neither the image's ENV nor a label."""
    globals_, stages = _stages(DOCKERFILE.read_text(encoding="utf-8"))
    lines = list(globals_) + [line for stage in stages.values() for line in stage["lines"]]
    keys = [key for keyword, rest in lines if keyword in ("ARG", "ENV") for key, _value, _given in _pairs(rest, {})]
    assert keys and not [key for key in keys if _SECRETISH.search(key)], keys
    args, _rendered = _image(plan, data)
    for flavour in ("runtime", "toolkit"):
        env, labels = render(dict(args, DLBOX_CI_CUDA=flavour, PIP_INDEX_URL=_PRIVATE, PIP_EXTRA_INDEX_URL=_PRIVATE))
        assert not [v for v in list(env.values()) + list(labels.values()) if "s3cr3t" in v]


def test_every_run_that_runs_pip_reads_the_index_from_the_pip_conf_secret():
    """The ansible stage (pip install ansible-core) and both playbook layers (the roles' pip) mount the pip_conf secret
    and hand it to pip through PIP_CONFIG_FILE (the ansible stage itself, the layers through dlbox-ci-layer.sh)."""
    _globals, stages = _stages(DOCKERFILE.read_text(encoding="utf-8"))
    (ansible_run,) = [rest for keyword, rest in stages["ansible"]["lines"] if keyword == "RUN"]
    assert "pip install" in ansible_run and "--mount=type=secret,id=pip_conf" in ansible_run
    assert "if [ -s /run/secrets/pip_conf ]; then export PIP_CONFIG_FILE=/run/secrets/pip_conf; fi;" in ansible_run
    for name in ("cuda", "image"):
        (run,) = _playbook_runs(stages, name)
        assert "--mount=type=secret,id=pip_conf" in run, name
    # the secret's empty mount point (no secret given) is removed like the CA bundle's
    (cleanup,) = [rest for keyword, rest in stages["image"]["lines"] if keyword == "RUN" and "rmdir" in rest]
    assert "/run/secrets/pip_conf" in cleanup


@pytest.mark.parametrize("stage", ["cuda", "image"])
def test_the_layers_hand_pip_the_pip_conf_secret_and_nothing_else(tmp_path, stage):
    env = dict(_LAYER_ENV, DLBOX_FRAMEWORKS="{}", DLBOX_STACK="{}") if stage == "image" else dict(_LAYER_ENV)
    (call,) = run_layer(DOCKERFILE.read_text(encoding="utf-8"), stage, env, tmp_path / "with",
                        pip_conf="[global]\nindex-url = %s\n" % _PRIVATE)
    assert call["env"]["PIP_CONFIG_FILE"] == "/run/secrets/pip_conf" and "PIP_INDEX_URL" not in call["env"]
    assert "s3cr3t" not in json.dumps(call["argv"])
    (call,) = run_layer(DOCKERFILE.read_text(encoding="utf-8"), stage, env, tmp_path / "without")
    assert "PIP_CONFIG_FILE" not in call["env"]          # no secret given (BuildKit mounts an empty file): pip's own config


# ---- issue 51 red team (second round) HIGH 1: no pip.log, which holds the index URLs verbatim, in the image -----------
# pip hides a URL's user:password@ in its log, not a token in its path or query (Cloudsmith, Gemfury:
# https://host/<TOKEN>/.../simple), and python_env wrote that log into <env>/dlbox/pip.log, in the frameworks layer.

BUILD_TASKS = ROOT / "roles" / "python_env" / "tasks" / "build.yml"
_ENV_DIR = "/opt/dlbox/envs/.versions/torch-1"


def _pip_argvs(pip_log):
    """The argv of python_env's pip download and pip install, rendered as Ansible does for this python_env_pip_log."""
    (block,) = yaml.safe_load(BUILD_TASKS.read_text(encoding="utf-8"))
    templar = Templar(loader=DataLoader(), variables={"__python_env_dir": _ENV_DIR, "python_env_pip_log": pip_log})
    variables = {"__python_env_pip": [_ENV_DIR + "/bin/python", "-m", "pip"],
                 "__python_env_log": templar.template(trust_as_template(block["vars"]["__python_env_log"])),
                 "__python_env_env": {"pip_args": ["--no-index", "--find-links", "/srv/dlbox-context/wheelhouse"]},
                 "__python_env_wheels": _ENV_DIR + "/dlbox/wheels", "__python_env_dir": _ENV_DIR}
    tasks = {t["name"]: t for t in block["block"]}
    return [Templar(loader=DataLoader(), variables=variables).template(
        trust_as_template(tasks[name]["ansible.builtin.command"]["argv"]))
        for name in ("Download every wheel of the request", "Install the downloaded wheels, nothing else")]


def test_python_env_writes_pip_log_only_where_asked():
    for argv in _pip_argvs(True):                      # the role's default, on a host: the log as before
        assert argv[argv.index("--log") + 1] == _ENV_DIR + "/dlbox/pip.log", argv
    for argv in _pip_argvs(False):
        assert "--log" not in argv and not [a for a in argv if "pip.log" in a], argv


def test_the_ci_image_keeps_no_pip_log_and_refuses_a_site_that_asks_for_one():
    tasks = _ci_tasks()
    (include,) = [t for t in tasks if (t.get("ansible.builtin.include_role") or {}).get("name") == "dlbox.stack.python_env"]
    assert include["vars"]["python_env_pip_log"] is False
    # the site's vars file comes as extra vars, which win over include_role's vars: such a site is refused first
    (refusal,) = [t for t in tasks if t.get("name") == "Refuse pip's log in the image"]
    assert tasks.index(refusal) < tasks.index(include)
    that = refusal["ansible.builtin.assert"]["that"]
    for site, passes in (({}, True), ({"python_env_pip_log": False}, True), ({"python_env_pip_log": True}, False)):
        assert Templar(loader=DataLoader(), variables=site).template(trust_as_template("{{ %s }}" % that)) is passes, site


# ---- issue 51 red team, second round, LOW 5 and LOW 1: what the docs say of CDI and of the builders --------------------

def _flat(text):
    return " ".join(text.split())


def test_the_docs_say_that_cdi_mode_reads_nvidia_visible_devices_and_how_to_keep_gpus_from_gpu_less_jobs():
    docs = _flat(_DOCS.read_text(encoding="utf-8"))
    assert "CDI takes the devices it is given" not in docs          # the round-one wording, wrong for mode = "cdi"
    assert "still reads `NVIDIA_VISIBLE_DEVICES`" in docs and "default-kind" in docs and "nvidia.com/gpu=all" in docs
    # NVIDIA_VISIBLE_DEVICES=all is baked in: a GPU-less job on an NVIDIA-default-runtime node sees every GPU unless ...
    assert "accept-nvidia-visible-devices-envvar-when-unprivileged = false" in docs
    env, _labels = render({"DLBOX_CI_CUDA": "runtime", "DLBOX_PLAN": "{}", "DLBOX_CUDA": "13.0"})
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"                    # what the paragraph is about


def test_the_docs_name_the_builders_and_not_kaniko():
    for path in (_DOCS, DOCKERFILE):
        text = _flat(path.read_text(encoding="utf-8"))
        assert "GoogleContainerTools/kaniko issue 3028" in text and "buildctl" in text, path.name


# ---- NVIDIA's apt CUDA user space only where the framework wheels do not carry their own (issue 51 red team MEDIUM 5)

def _play_vars():
    plays = yaml.safe_load(CI_PLAYBOOK.read_text(encoding="utf-8"))
    (bake,) = [p for p in plays if p.get("name") == "Bake the CI image"]
    return plays, bake


def test_the_cuda_layer_installs_cuda_cudnn_and_nccl_only_as_the_decision_says():
    """Every task that installs or lays out NVIDIA's apt CUDA, cuDNN or NCCL runs on the decision's effective parts
    (__ci.parts, which dlbox_ci_system_cuda empties), not on the plan's parts (__ci_runs)."""
    tasks = {t.get("name"): t for t in _ci_tasks()}
    wanted = {
        "Toolkit only - the host compiler nvcc compiles with (what NVIDIA's nvcc package depends on)": "__ci.parts.cuda",
        "CUDA toolkit of the plan (stack.cuda), verified for the target architectures": "__ci.parts.cuda",
        "Runtime only - NVIDIA's CUDA repository for the runtime libraries": "__ci.parts.cuda",
        "Runtime only - install the plan's CUDA runtime libraries (no compiler, header or stub)": "__ci.parts.cuda",
        "Put the plan's CUDA libraries on the dynamic linker's path (jobs do not read /etc/profile.d)": "__ci.parts.cuda",
        "The plan's cuDNN (stack.cudnn)": "__ci.parts.cudnn",
        "NCCL of the plan (stack.nccl), without nccl.conf": "__ci.parts.nccl",
    }
    for name, part in wanted.items():
        assert part in tasks[name]["when"].split(" and "), (name, tasks[name]["when"])
    assert not [t.get("name") for t in _ci_tasks() if re.search(r"__ci_runs[.](cuda|cudnn|nccl)", str(t.get("when")))]


def test_dlbox_ci_system_cuda_defaults_to_auto_everywhere_it_is_read():
    """The playbooks' default, the filter's documented default and the playbook header agree."""
    for path in (CI_PLAYBOOK, ARGS_PLAYBOOK):
        text = path.read_text(encoding="utf-8")
        defaults = re.findall(r"dlbox_ci_system_cuda \| default\(([^)]*)\)", text)
        assert defaults and set(defaults) == {"'auto'"}, (path, defaults)
        assert "system=dlbox_ci_system_cuda | default('auto')" in text, path
    doc = yaml.safe_load((ROOT / "plugins" / "filter" / "ci_image_plan.yml").read_text(encoding="utf-8"))
    assert doc["DOCUMENTATION"]["options"]["system"]["default"] == "auto"
    assert "#   dlbox_ci_system_cuda  auto (default), true or false" in CI_PLAYBOOK.read_text(encoding="utf-8")
    assert "`dlbox_ci_system_cuda`" in (ROOT / "docs" / "ci-images.md").read_text(encoding="utf-8")


def test_the_frameworks_layer_reads_back_what_the_cuda_layer_decided(tmp_path):
    """The playbook's own tasks, run by Ansible: the cuda layer records its decision beside dlbox_ci_record (the plan's
    cu130 torch: no apt CUDA), and the frameworks layer, handed a cpu torch the cuda layer never saw, is refused."""
    plays, bake = _play_vars()
    read = [t for t in plays[0]["tasks"] if "ansible.builtin.slurp" in t]      # the plan's record and the layer's
    assert len(read) == 2 and "ci-layer.json" in str(read[1])
    decide_task = [t for t in bake["tasks"] if t.get("name") == "Decide the image from the plan"]
    (record,) = [t for t in bake["tasks"] if str((t.get("ansible.builtin.copy") or {}).get("dest", "")).endswith("ci-layer.json")]
    show = {"name": "show", "ansible.builtin.debug": {"msg": "{{ {'ok': __ci.ok, 'system_cuda': __ci.system_cuda, "
                                                             "'errors': __ci.errors} | to_json }}"}}
    bake_vars = {k: v for k, v in bake["vars"].items() if k != "__ci_runs"}
    bake_vars["__ci_runs"] = {"cuda": True, "cudnn": True, "nccl": True, "python_env": True}
    playbook = tmp_path / "layers.yml"
    playbook.write_text(yaml.safe_dump([
        {"hosts": "all", "gather_facts": False, "tasks": read},
        {"hosts": "all", "gather_facts": True, "gather_subset": ["!all", "min"], "vars": bake_vars,
         "tasks": decide_task + [record, show]}]), encoding="utf-8")
    plan = resolve({}, {"cuda": "13.0", "cudnn": "9.20.0.48", "pytorch": "2.13"}, hardware=HW)
    base = [p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").exists()][0]
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=base, ANSIBLE_HOME=str(tmp_path / "ansible-home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    record_path = tmp_path / "image" / "plan.json"
    record_path.parent.mkdir()

    def run(layer, extra):
        variables = dict({"dlbox_plan": plan, "dlbox_ci_layer": layer, "dlbox_ci_cuda_archs": ["9.0"],
                          "dlbox_ci_record": str(record_path), "ansible_python_interpreter": sys.executable}, **extra)
        proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                               "-e", json.dumps(variables), str(playbook)],
                              capture_output=True, text=True, env=env, timeout=300, check=False)
        out = json.loads(proc.stdout[proc.stdout.index("{"):])
        (shown,) = [t["hosts"]["localhost"]["msg"] for p in out["plays"] for t in p["tasks"] if t["task"]["name"] == "show"]
        return json.loads(shown) if isinstance(shown, str) else shown

    cuda = run("cuda", {})
    assert cuda == {"ok": True, "system_cuda": False, "errors": []}
    assert json.loads((tmp_path / "image" / "ci-layer.json").read_text()) == {"system_cuda": False, "flavour": "runtime"}
    record_path.write_text(json.dumps(plan))
    cpu = [{"name": "torch", "frameworks": ["pytorch"], "variant": "cpu"}]
    frameworks = run("frameworks", {"python_env_environments": cpu})
    assert frameworks["ok"] is False and "left out NVIDIA's apt CUDA user space" in frameworks["errors"][0]
