# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a Jetson's PyTorch comes from (plugin_utils.jetpack_pytorch): the choice of source, in order of trust, and the
early refusal when the source's listing lacks the planned wheel. The listings are FIXTURES in the shape of the real
pages (tests/fixtures/jetson/pytorch_index, each file's header says what it follows); the sources below are
data/jetson.yml's as they were when these rules were written (a refresh of the file never rewrites the tests)."""

from __future__ import annotations

import copy
import datetime
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.jetpack_plan import (
    JetsonDataError, check_jetson_data, load_jetson_data)
from ansible_collections.dlbox.stack.plugins.plugin_utils.jetpack_pytorch import (
    check_listing, check_reach, choose, parse_listing, reach_answer)

ROOT = Path(__file__).resolve().parents[4]
LISTINGS = ROOT / "tests" / "fixtures" / "jetson" / "pytorch_index"
COMMUNITY_PAGE = (LISTINGS / "community-jp6-cu126-torch.html").read_text(encoding="utf-8")
NVIDIA_PAGE = (LISTINGS / "nvidia-redist-jp-v61-pytorch.html").read_text(encoding="utf-8")
NV_WHEEL = "2.5.0a0+872d972e41.nv24.08.17622132"
TODAY = datetime.date(2026, 12, 5)

SOURCES = {
    "max_age_days": 180,
    "builds": {"jp6-cu126": [
        {"name": "nvidia", "kind": "find_links", "url": "https://developer.download.nvidia.com/compute/redist/jp/v61/pytorch/",
         "torch": NV_WHEEL, "python": "3.10", "confirmed": "2025-03-28", "source": "frozen", "grade": "S"},
        {"name": "community", "kind": "index", "url": "https://pypi.jetson-ai-lab.io/jp6/cu126", "torch": "2.8.0",
         "python": "3.10", "confirmed": "2025-10-27", "source": "frozen", "grade": "U"},
    ]},
    "retired": [{"host": "pypi.jetson-ai-lab.dev", "since": "2025-07", "moved_to": "pypi.jetson-ai-lab.io",
                 "source": "NVIDIA/Isaac-GR00T#301"}],
}
# the plan's stack.pytorch for an Orin on JetPack 6.2 (the resolver's shape)
PLANNED = {"version": "2.5.0", "variant": "jp6-cu126", "index_url": "https://pypi.jetson-ai-lab.io/jp6/cu126",
           "cuda": "12.6", "cudnn": "9.3", "torchvision": None, "torchaudio": None, "index_replaces_pypi": True}


def pick(source="auto", pytorch=None, sources=None, today=TODAY, **options):
    return choose(PLANNED if pytorch is None else pytorch, dict(options, source=source), sources or SOURCES, today=today)


# --- the choice, in order of trust ---------------------------------------------------------------------------------
def test_auto_takes_nvidias_own_wheel_from_its_folder_pinned_exactly():
    got = pick(today=datetime.date(2025, 4, 1))
    assert got["ok"] and got["source"]["name"] == "nvidia"
    assert got["pytorch"]["version"] == NV_WHEEL and got["pytorch"]["index_url"] is None
    assert "index_replaces_pypi" not in got["pytorch"]          # PyPI stays pip's index for the dependencies
    assert got["find_links"] == [SOURCES["builds"]["jp6-cu126"][0]["url"]]
    assert got["listing_url"] == SOURCES["builds"]["jp6-cu126"][0]["url"]
    assert got["warnings"] == []                                # graded S, confirmed within max_age_days


def test_the_community_index_at_its_current_host_is_pips_index_and_warned_as_unconfirmed():
    got = pick("community")
    assert got["ok"] and got["pytorch"]["index_url"] == "https://pypi.jetson-ai-lab.io/jp6/cu126"
    assert got["pytorch"]["index_replaces_pypi"] and got["pytorch"]["version"] == "2.5.0"
    assert got["listing_url"] == "https://pypi.jetson-ai-lab.io/jp6/cu126/torch/" and got["find_links"] == []
    assert any("last seen serving torch 2.8.0 (2025-10-27), not the plan's 2.5.0" in w for w in got["warnings"])
    assert any("is unconfirmed: last confirmed 2025-10-27 (grade U" in w for w in got["warnings"])


def test_a_source_graded_unconfirmed_is_warned_even_when_recently_confirmed():
    got = pick("community", today=datetime.date(2025, 11, 1))   # 5 days after its confirmation
    assert any("is unconfirmed: last confirmed 2025-10-27 (grade U" in w for w in got["warnings"])


def test_an_old_confirmation_is_warned_even_for_a_trusted_source():
    got = pick()                                                # 2025-03-28 is more than 180 days before TODAY
    assert got["ok"] and any("is unconfirmed: last confirmed 2025-03-28" in w for w in got["warnings"])


@pytest.mark.parametrize("kind, version, index_url, find_links", [
    ("index", "2.5.0", "http://mirror.lab/jetson/jp6/cu126", []),                 # a copy of the community index
    ("find_links", NV_WHEEL, None, ["http://mirror.lab/jetson/jp6/cu126/"]),      # a copy of NVIDIA's folder
])
def test_a_lab_mirror_or_wheelhouse(kind, version, index_url, find_links):
    got = pick("mirror", mirror_url="http://mirror.lab/jetson/jp6/cu126/", mirror_kind=kind)
    assert got["ok"], got["errors"]
    assert got["source"]["name"] == "mirror" and got["pytorch"]["version"] == version
    assert got["pytorch"]["index_url"] == index_url and got["find_links"] == find_links


@pytest.mark.parametrize("source, options, words", [
    ("mirror", {"mirror_url": "https://pypi.jetson-ai-lab.dev/jp6/cu126"},
     "jetpack_pytorch_mirror_url points at pypi.jetson-ai-lab.dev, which has not served the Jetson AI Lab index since 2025-07"),
    ("mirror", {"mirror_url": ""}, "jetpack_pytorch_mirror_url is ''"),
    ("mirror", {"mirror_url": "http://m/x", "mirror_kind": "wheelhouse"}, "jetpack_pytorch_mirror_kind is 'wheelhouse'"),
    ("pypi", {}, "jetpack_pytorch_source is 'pypi'; choose one of auto, nvidia, community, mirror"),
])
def test_bad_choices_are_refused_naming_the_variable(source, options, words):
    got = pick(source, **options)
    assert not got["ok"] and words in got["errors"][0], got["errors"]


def test_a_dead_host_in_the_data_is_refused_too():
    sources = copy.deepcopy(SOURCES)
    sources["builds"]["jp6-cu126"][1]["url"] = "https://pypi.jetson-ai-lab.dev/jp6/cu126"
    got = pick("community", sources=sources)
    assert not got["ok"] and "data/jetson.yml points at pypi.jetson-ai-lab.dev" in got["errors"][0]
    assert "moved to pypi.jetson-ai-lab.io" in got["errors"][0]


def test_nvidias_wheel_of_another_release_is_refused():
    got = pick("nvidia", pytorch=dict(PLANNED, version="2.8.0"))
    assert not got["ok"] and "is torch %s, another release" % NV_WHEEL in got["errors"][0]


@pytest.mark.parametrize("pytorch, words", [
    (None, "has no PyTorch for this Jetson"),
    (dict(PLANNED, variant="jp7-cu130", index_url=None), "names no source for the plan's PyTorch build 'jp7-cu130'"),
])
def test_a_plan_without_a_known_build_is_refused(pytorch, words):
    got = choose(pytorch, {"source": "auto"}, SOURCES, today=TODAY)
    assert not got["ok"] and words in got["errors"][0]


def test_pytorchs_own_aarch64_wheels_of_a_thor_plan_come_from_the_plans_index():
    # JetPack 7 on Thor: the plan takes PyTorch's own cu130 wheels (data/compat.yml pytorch-aarch64), not a Jetson build
    thor = {"version": "2.9.1", "variant": "cu130", "index_url": "https://download.pytorch.org/whl/cu130", "cuda": "13.0"}
    got = choose(thor, {"source": "auto"}, SOURCES, today=TODAY)
    assert got["ok"] and got["source"]["name"] == "plan" and got["pytorch"] == thor
    assert got["listing_url"] == "https://download.pytorch.org/whl/cu130/torch/" and got["pin"] == "2.9.1+cu130"
    page = '<a href="/whl/cu130/torch-2.9.1%2Bcu130-cp312-cp312-manylinux_2_28_aarch64.whl#sha256=00">x</a>'
    assert check_listing(page, got, python="3.12")["ok"]
    assert not check_listing(page, got, python="3.10")["ok"]


# --- the listings (FIXTURES in the real pages' shape) ------------------------------------------------------------
def test_parse_a_pep503_page_and_a_folder_listing():
    assert [(w["version"], w["python"]) for w in parse_listing(COMMUNITY_PAGE)] == [
        ("2.8.0", "cp310"), ("2.10.0", "cp310"), ("2.8.0", "cp312"), ("2.9.0", "cp312")]
    # the folder escapes the local version's '+' as %2B; the ../ link is no wheel
    assert [w["filename"] for w in parse_listing(NVIDIA_PAGE)] == [
        "torch-%s-cp310-cp310-linux_aarch64.whl" % NV_WHEEL]


def test_nvidias_folder_has_the_pinned_wheel():
    got = check_listing(NVIDIA_PAGE, pick(), python="3.10")
    assert got == {"ok": True, "errors": [], "versions": [NV_WHEEL]}


def test_the_community_index_without_the_planned_wheel_is_refused_offering_what_it_has():
    got = check_listing(COMMUNITY_PAGE, pick("community"), python="3.10")
    assert not got["ok"] and got["versions"] == ["2.8.0", "2.10.0"]   # the cp312 builds do not fit Python 3.10
    message = got["errors"][0]
    assert "has no torch 2.5.0 wheel for Python 3.10 on aarch64" in message
    assert "read from https://pypi.jetson-ai-lab.io/jp6/cu126/torch/" in message and "it has 2.8.0, 2.10.0" in message
    assert message.endswith("Nothing was changed.")


def test_an_empty_listing_says_so():
    got = check_listing("<html></html>", pick("community"), python="3.10")
    assert "it has no torch wheel for it" in got["errors"][0]


def test_the_community_index_with_the_plans_version_passes():
    got = check_listing(COMMUNITY_PAGE, pick("community", pytorch=dict(PLANNED, version="2.8.0")), python="3.10")
    assert got["ok"], got["errors"]


# --- the shipped data ----------------------------------------------------------------------------------------------
def test_shipped_sources_are_well_formed_and_none_is_on_a_retired_host():
    data = load_jetson_data()["pytorch_sources"]
    retired = {entry["host"] for entry in data["retired"]}
    for sources in data["builds"].values():
        assert all(source["source"] and source["confirmed"] for source in sources)
        assert not [s["url"] for s in sources if any(host in s["url"] for host in retired)]


def test_the_plans_index_in_compat_is_not_on_a_retired_host():
    retired = [entry["host"] for entry in load_jetson_data()["pytorch_sources"]["retired"]]
    for route in load_compat()["jetson_pytorch"].values():
        assert not any(host in (route.get("index_url") or "") for host in retired), route["index_url"]


@pytest.mark.parametrize("change, message", [
    (lambda s: s["builds"]["jp6-cu126"][0].update(confirmed="March 2025"), r"\[0\]: needs 'confirmed' as a quoted date"),
    (lambda s: s["builds"]["jp6-cu126"][1].update(kind="simple"), r"\[1\]: needs 'kind' index or find_links"),
    (lambda s: s.update(max_age_days=0), r"pytorch_sources.max_age_days: must be a positive integer"),
])
def test_a_bad_source_entry_is_named(change, message):
    data = copy.deepcopy(load_jetson_data())
    sources = copy.deepcopy(SOURCES)
    change(sources)
    data["pytorch_sources"] = sources
    with pytest.raises(JetsonDataError, match=message):
        check_jetson_data(data)


# --- libraries a wheel loads that JetPack lacks (issue 52 red team HIGH 4, MEDIUM 11) --------------------------------
# NVIDIA's jp/v61 torch: "ImportError: libcusparseLt.so.0: cannot open shared object file" on JetPack 6 (public setup
# scripts cited in data/jetson.yml); the community index's torch 2.8: "ImportError: libcudss.so.0" (Isaac-GR00T#343).
CUSPARSELT = {"soname": "libcusparseLt.so.0", "version": "0.8.1.1", "sha256": "5426a897" + "0" * 56,
              "url": "https://developer.download.nvidia.com/compute/cusparselt/redist/libcusparse_lt/linux-aarch64/"
                     "libcusparse_lt-linux-aarch64-0.8.1.1_cuda12-archive.tar.xz", "source": "frozen"}
CUDSS = {"soname": "libcudss.so.0", "url": None, "reason": "NVIDIA's CUDA apt repository, not added on L4T",
         "source": "frozen"}


def with_needs(nvidia=("cusparselt",), community=("cusparselt", "cudss")):
    sources = copy.deepcopy(SOURCES)
    sources["libraries"] = {"cusparselt": dict(CUSPARSELT), "cudss": dict(CUDSS)}
    sources["builds"]["jp6-cu126"][0]["needs"] = list(nvidia)
    sources["builds"]["jp6-cu126"][1]["needs"] = list(community)
    return sources


def test_nvidias_wheel_comes_with_cusparselt_from_nvidias_archive_checked_by_sha256():
    got = pick(sources=with_needs(), today=datetime.date(2025, 4, 1))
    assert got["ok"], got["errors"]
    assert got["libraries"] == [{"name": "cusparselt", "soname": "libcusparseLt.so.0", "version": "0.8.1.1",
                                 "url": CUSPARSELT["url"], "sha256": CUSPARSELT["sha256"], "folder": "cusparselt-0.8.1.1"}]


def test_a_source_whose_torch_loads_a_library_the_role_cannot_install_is_refused_before_any_change():
    got = pick("community", sources=with_needs())
    assert not got["ok"] and got["libraries"] == []
    assert "libcudss.so.0 (cudss: NVIDIA's CUDA apt repository, not added on L4T)" in got["errors"][0]
    assert "jetpack_pytorch_source" in got["errors"][0] and "Nothing was changed." in got["errors"][0]
    # the refused source is still named (molecule/edge builds its FIXTURE community index at that URL's path)
    assert got["source"]["url"] == SOURCES["builds"]["jp6-cu126"][1]["url"]


def test_a_mirror_is_warned_not_refused_and_fetches_nothing_from_nvidia_unless_given_a_folder_of_the_archives():
    got = pick("mirror", sources=with_needs(), mirror_url="http://mirror.lab/jetson/jp6/cu126", mirror_kind="index")
    assert got["ok"], got["errors"]
    assert got["libraries"] == []                                 # a lab's mirror: often NVIDIA is out of reach
    assert any("libcudss.so.0" in w and "mirror" in w for w in got["warnings"])
    assert any("libcusparseLt.so.0" in w and "jetpack_pytorch_libraries_url" in w for w in got["warnings"])
    folder = pick("mirror", sources=with_needs(), mirror_url="http://mirror.lab/jp/v61/", mirror_kind="find_links",
                  libraries_url="http://mirror.lab/nvidia-archives/")
    assert folder["ok"], folder["errors"]
    assert [lib["url"] for lib in folder["libraries"]] == [
        "http://mirror.lab/nvidia-archives/libcusparse_lt-linux-aarch64-0.8.1.1_cuda12-archive.tar.xz"]
    assert folder["libraries"][0]["sha256"] == CUSPARSELT["sha256"]   # the same archive, the same checksum


def test_a_lab_copy_of_nvidias_archives_serves_nvidias_own_source_too_and_a_bad_url_is_refused():
    got = pick(sources=with_needs(), today=datetime.date(2025, 4, 1), libraries_url="file:///srv/nvidia")
    assert [lib["url"] for lib in got["libraries"]] == [
        "file:///srv/nvidia/libcusparse_lt-linux-aarch64-0.8.1.1_cuda12-archive.tar.xz"]
    bad = pick(sources=with_needs(), libraries_url="mirror.lab/nvidia")
    assert not bad["ok"] and bad["errors"][0].startswith("jetpack_pytorch_libraries_url is 'mirror.lab/nvidia'")


def test_a_source_without_needs_installs_nothing():
    assert pick(today=datetime.date(2025, 4, 1))["libraries"] == []


def test_the_shipped_nvidia_wheel_of_jetpack_6_gets_cusparselt_and_the_community_index_is_refused():
    section = load_jetson_data()["pytorch_sources"]
    nvidia = choose(PLANNED, {"source": "nvidia"}, section, today=TODAY)
    assert nvidia["ok"], nvidia["errors"]
    assert [lib["soname"] for lib in nvidia["libraries"]] == ["libcusparseLt.so.0"]
    assert "/linux-aarch64/" in nvidia["libraries"][0]["url"]          # Jetson's (Tegra) build, not linux-sbsa
    community = choose(PLANNED, {"source": "community"}, section, today=TODAY)
    assert not community["ok"] and "libcudss.so.0" in community["errors"][0]


@pytest.mark.parametrize("change, message", [
    (lambda s: s["libraries"]["cusparselt"].update(sha256="abc"), r"libraries.cusparselt: needs 'sha256'"),
    (lambda s: s["libraries"]["cusparselt"].update(url="https://x/lib.zip"), r"libraries.cusparselt: needs 'url'"),
    (lambda s: s["libraries"]["cudss"].pop("reason"), r"libraries.cudss: without 'url' it needs the 'reason'"),
    (lambda s: s["builds"]["jp6-cu126"][0].update(needs=["cublaslt"]), r"\[0\]: 'needs' must list libraries"),
])
def test_a_bad_library_entry_is_named(change, message):
    data = copy.deepcopy(load_jetson_data())
    sources = with_needs()
    change(sources)
    data["pytorch_sources"] = sources
    with pytest.raises(JetsonDataError, match=message):
        check_jetson_data(data)


# --- JetPacks without a PyTorch build are refused with the data's reason (issue 52 red team MEDIUM 12) ----------------
GAPS = [{"jetpack": "7.2", "families": ["orin"], "reason": "no wheel for Orin on CUDA 13.2 is published",
         "date": "2026-12-06", "source": "frozen", "grade": "S"},
        {"jetpack": "7.2.1", "reason": "no CUDA or PyTorch in the data yet", "date": "2026-12-06", "source": "frozen",
         "grade": "S"}]


@pytest.mark.parametrize("jetpack, words", [
    ({"version": "7.2", "family": "orin", "device": "Jetson AGX Orin"},
     "JetPack 7.2 on Jetson AGX Orin has no PyTorch build to install: no wheel for Orin on CUDA 13.2 is published"),
    ({"version": "7.2.1", "family": "thor", "device": "Jetson AGX Thor"},
     "JetPack 7.2.1 on Jetson AGX Thor has no PyTorch build to install: no CUDA or PyTorch in the data yet"),
    ({"version": "7.2", "family": "thor", "device": "Jetson AGX Thor"},      # not a gap of Thor's: the plain refusal
     "The plan (dlbox_plan) has no PyTorch for this Jetson"),
    (None, "The plan (dlbox_plan) has no PyTorch for this Jetson"),
])
def test_a_plan_without_pytorch_is_refused_with_the_datas_reason_for_its_jetpack(jetpack, words):
    got = choose(None, {"source": "auto"}, dict(SOURCES, gaps=GAPS), today=TODAY, jetpack=jetpack)
    assert not got["ok"] and got["errors"][0].startswith(words)
    assert "dlbox_edge_python_env" in got["errors"][0] and got["errors"][0].endswith("Nothing was changed.")


def test_the_shipped_data_names_the_jetpacks_without_pytorch_for_orin():
    section = load_jetson_data()["pytorch_sources"]
    for version in ("7.2", "7.2.1"):
        got = choose(None, {"source": "auto"}, section, today=TODAY, jetpack={"version": version, "family": "orin"})
        assert "JetPack %s on orin has no PyTorch build to install" % version in got["errors"][0]


# --- every JetPack edge.yml supports has a real wheel route, or is refused with the data's reason (issue 52, third
# red team MEDIUM 5): JetPack 6.0 NVIDIA's jp/v60 folder, 6.1-6.2.3 the jp6/cu126 builds (NVIDIA's jp/v61 wheel first),
# Thor on 7.0-7.2.1 PyTorch's own aarch64 cu130 wheels; Orin on 7.2 and 7.2.1 refused (no wheel for sm_87 on CUDA 13)
DEVICES = {"orin": "Jetson AGX Orin", "thor": "Jetson AGX Thor"}
EXPECTED = {
    ("6.0", "orin"): ("nvidia", "https://developer.download.nvidia.com/compute/redist/jp/v60/pytorch/",
                      "2.4.0a0+07cecf4168.nv24.05.14710581"),
    ("7.0", "thor"): ("plan", "https://download.pytorch.org/whl/cu130", None),
    ("7.1", "thor"): ("plan", "https://download.pytorch.org/whl/cu130", None),
    ("7.2", "thor"): ("plan", "https://download.pytorch.org/whl/cu130", None),
    ("7.2.1", "thor"): ("plan", "https://download.pytorch.org/whl/cu130", None),
    ("7.2", "orin"): None, ("7.2.1", "orin"): None,
}
JP61 = ("nvidia", "https://developer.download.nvidia.com/compute/redist/jp/v61/pytorch/", NV_WHEEL)


def _supported():
    from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_resolver import resolve
    from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_gpu_index
    compat, index = load_compat(), load_gpu_index()
    for jp in compat["jetpack"]:
        if int(str(jp["version"]).split(".", maxsplit=1)[0]) < 6:       # edge.yml: JetPack 6 and newer (L4T R36 and later)
            continue
        for family in jp["devices"]:
            hardware = {"gpus": [DEVICES[family]], "l4t": str(jp["l4t"][-1])}
            yield str(jp["version"]), family, resolve(compat, index.host_from_hardware(hardware), {}, gpu_index=index)


def test_every_supported_jetpack_has_a_real_wheel_route_or_the_datas_reason():
    section = load_jetson_data()["pytorch_sources"]
    seen = set()
    for version, family, plan in _supported():
        stack = plan["stack"]
        assert stack["jetpack"]["version"] == version, (version, family, plan.get("errors"))
        got = choose(stack.get("pytorch"), {"source": "auto"}, section, today=TODAY, jetpack=stack["jetpack"])
        expected = EXPECTED.get((version, family), JP61)
        seen.add((version, family))
        if expected is None:
            assert not got["ok"] and "JetPack %s on Jetson AGX Orin has no PyTorch build to install: no PyTorch wheel " \
                "for Orin (sm_87)" % version in got["errors"][0], got["errors"]
            continue
        assert got["ok"], (version, family, got["errors"])
        name, url, pin = expected
        assert (got["source"]["name"], got["source"]["url"]) == (name, url.rstrip("/") if name == "plan" else url)
        if pin:
            assert got["pin"] == pin
    assert {("6.0", "orin"), ("6.2.3", "orin"), ("7.2.1", "thor"), ("7.2.1", "orin")} <= seen


def test_a_gap_without_a_reason_is_named():
    data = copy.deepcopy(load_jetson_data())
    data["pytorch_sources"]["gaps"] = [dict(GAPS[0], reason="")]
    with pytest.raises(JetsonDataError, match=r"pytorch_sources.gaps\[0\]: needs 'reason'"):
        check_jetson_data(data)


def test_the_filter_gives_the_plans_jetpack_to_the_choice():
    """The role module's pytorch entry (roles/jetpack/tasks/pytorch.yml); the deprecated filter calls it."""
    from ansible_collections.dlbox.stack.plugins.filter.jetpack import jetpack_pytorch
    from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
    from ansible.errors import AnsibleFilterError
    plan = {"stack": {"pytorch": None, "jetpack": {"version": "7.2", "family": "orin", "device": "Jetson AGX Orin"}}}
    got = role_module("jetpack", "pytorch", options={"source": "auto"}, plan=plan)
    assert got["errors"][0].startswith("JetPack 7.2 on Jetson AGX Orin has no PyTorch build to install")
    assert jetpack_pytorch({"source": "auto"}, plan) == got
    with pytest.raises(AnsibleFilterError, match=r"role_module\(jetpack, pytorch\): expected the options"):
        role_module("jetpack", "pytorch", options="auto", plan=plan)
    with pytest.raises(AnsibleFilterError, match=r"role_module\(jetpack, pytorch\): expected the options"):
        jetpack_pytorch("auto", plan)


# --- what NVIDIA's jp/v61 wheel needs besides torch (issue 52, second red team HIGH 2) --------------------------------
# NVIDIA's install guide installs libopenblas-dev before the wheel (pytorch/TensorRT#3885: "ImportError:
# libopenblas.so.0"); the nv24.08 build is compiled against NumPy 1.x (dusty-nv/jetson-containers#1537); torch loads
# JetPack's CUDA and cuDNN libraries.
def _needing():
    sources = copy.deepcopy(SOURCES)
    sources["builds"]["jp6-cu126"][0].update(apt_needs=["libopenblas-dev"], components_needed=["cuda", "cudnn"],
                                             pip_constraints=["numpy<2"])
    return sources


def test_the_source_gives_its_apt_packages_and_pip_constraints():
    got = pick(sources=_needing(), components=["cuda", "cudnn", "container"])
    assert got["ok"], got["errors"]
    assert got["apt_packages"] == ["libopenblas-dev"] and got["pip_packages"] == ["numpy<2"]
    mirror = pick("mirror", sources=_needing(), mirror_url="http://mirror.lab/jp/", mirror_kind="find_links")
    assert mirror["apt_packages"] == ["libopenblas-dev"] and mirror["pip_packages"] == ["numpy<2"]


@pytest.mark.parametrize("components, ok", [
    (["cuda", "container"], False), (["container"], False), (["all"], True), (["cuda", "cudnn"], True), (None, True)])
def test_jetpack_components_without_cuda_and_cudnn_are_refused_for_a_source_that_needs_them(components, ok):
    got = pick(sources=_needing(), components=components)
    assert got["ok"] is ok
    if not ok:
        assert got["errors"][0].startswith("jetpack_components is %s, without " % (components,))
        assert "cudnn" in got["errors"][0] and got["errors"][0].endswith("Nothing was changed.")


def test_the_shipped_nvidia_source_needs_openblas_numpy_1_cuda_and_cudnn():
    section = load_jetson_data()["pytorch_sources"]
    got = choose(PLANNED, {"source": "nvidia", "components": ["all"]}, section, today=TODAY)
    assert got["apt_packages"] == ["libopenblas-dev"] and got["pip_packages"] == ["numpy<2"]
    assert not choose(PLANNED, {"source": "nvidia", "components": ["cuda", "container"]}, section, today=TODAY)["ok"]


def test_a_bad_apt_needs_is_named():
    data = copy.deepcopy(load_jetson_data())
    data["pytorch_sources"]["builds"]["jp6-cu126"][0]["apt_needs"] = "libopenblas-dev"
    with pytest.raises(JetsonDataError, match=r"\[0\]: 'apt_needs' must be a list"):
        check_jetson_data(data)


def test_the_shipped_community_index_is_the_pep_503_path_not_devpis_web_page():
    # devpi serves its web page at .../jp6/cu126 and the simple index at .../jp6/cu126/+simple (innate-inc/innate-os#579)
    section = load_jetson_data()["pytorch_sources"]
    community = next(s for s in section["builds"]["jp6-cu126"] if s["name"] == "community")
    assert community["url"] == "https://pypi.jetson-ai-lab.io/jp6/cu126/+simple"


def test_the_jetpack_6_plan_names_the_pytorch_edge_yml_installs():
    # issue 52 red team MEDIUM 7: the plan said torch 2.5.0 from the community index while warning that 2.5.0 is missing
    # there, and edge.yml installed NVIDIA's 2.5.0a0+872d972e41.nv24.08 from jp/v61: the plan now carries that pair
    section = load_jetson_data()["pytorch_sources"]
    nvidia = section["builds"]["jp6-cu126"][0]
    assert nvidia["name"] == "nvidia" and nvidia["kind"] == "find_links"
    route = load_compat()["jetson_pytorch"]["jetson-ai-lab-jp6"]
    assert (route["version"], route["index_url"]) == (nvidia["torch"], None)
    assert "index_replaces_pypi" not in route


# --- the libraries' archives reachable before any change (issue 52, third red team LOW 10) -----------------------------
# what the preflight registers: ansible.builtin.uri's result for a HEAD (status, msg; -1 without a connection) and
# ansible.builtin.stat's, each with its loop item (the library)
@pytest.mark.parametrize("result, expected", [
    ({"item": {"url": "https://x/a.tar.xz"}, "status": 200, "msg": "OK (unknown bytes)"}, (True, "HTTP 200")),
    ({"item": {"url": "https://x/a.tar.xz"}, "status": 404, "msg": "HTTP Error 404: Not Found"},
     (False, "HTTP 404 (HTTP Error 404: Not Found)")),
    ({"item": {"url": "https://x/a.tar.xz"}, "status": -1, "msg": "Request failed: <urlopen error [Errno -2] Name or service not known>"},
     (False, "no connection (Request failed: <urlopen error [Errno -2] Name or service not known>)")),
    ({"item": {"url": "file:///srv/a.tar.xz"}, "stat": {"exists": False}}, (False, "no such file on this host")),
    ({"item": {"url": "file:///srv/a.tar.xz"}, "stat": {"exists": True, "path": "/srv/a.tar.xz"}}, (True, "a file")),
])
def test_what_the_host_got_for_an_archive(result, expected):
    got = reach_answer(result)
    assert (got["ok"], got["answer"]) == expected and got["url"] == result["item"]["url"]


def test_an_archive_the_host_cannot_fetch_is_refused_naming_the_variable_that_points_elsewhere():
    decision = pick(sources=with_needs(), today=datetime.date(2025, 4, 1))
    url = decision["libraries"][0]["url"]
    got = check_reach(decision, [{"item": decision["libraries"][0], "status": 403, "msg": "HTTP Error 403: Forbidden"}])
    assert got == {"ok": False, "errors": [
        "The archive of libcusparseLt.so.0 (cusparselt 0.8.1.1), which the chosen PyTorch wheel loads and JetPack does not "
        "ship, cannot be fetched from this host: %s answered HTTP 403 (HTTP Error 403: Forbidden). Set "
        "jetpack_pytorch_libraries_url to a folder (http(s):// or file://) this host reaches that holds "
        "libcusparse_lt-linux-aarch64-0.8.1.1_cuda12-archive.tar.xz (the same sha256, %s), or install the library where "
        "the loader finds it. Nothing was changed." % (url, CUSPARSELT["sha256"])]}
    assert check_reach(decision, [{"item": decision["libraries"][0], "status": 200}]) == {"ok": True, "errors": []}
    assert check_reach(decision, []) == {"ok": True, "errors": []}     # the loader has it: nothing looked for


# the plan as the resolver gives it now (NVIDIA's build, no index): an index source pins the same release in the index's
# (PyPI's) numbering, a folder NVIDIA's exact build (issue 52 red team MEDIUM 7)
PLANNED_NV = dict(PLANNED, version=NV_WHEEL, index_url=None)
PLANNED_NV.pop("index_replaces_pypi")


@pytest.mark.parametrize("source, options, version, index_url", [
    ("auto", {}, NV_WHEEL, None),
    ("community", {}, "2.5.0", "https://pypi.jetson-ai-lab.io/jp6/cu126"),
    ("mirror", {"mirror_url": "http://mirror.lab/jp6/cu126", "mirror_kind": "index"}, "2.5.0", "http://mirror.lab/jp6/cu126"),
    ("mirror", {"mirror_url": "http://mirror.lab/wheels/", "mirror_kind": "find_links"}, NV_WHEEL, None),
])
def test_the_plans_nvidia_build_is_pinned_as_each_source_numbers_it(source, options, version, index_url):
    got = pick(source, pytorch=PLANNED_NV, today=datetime.date(2025, 4, 1), **options)
    assert got["ok"], got["errors"]
    assert (got["pytorch"]["version"], got["pytorch"]["index_url"]) == (version, index_url)


# --- a lab's index mirror on JetPack 6, whose plan names NVIDIA's build (issue 52 M-D) -------------------------------
NV_PLANNED = dict(PLANNED, version=NV_WHEEL, index_url=None)
NV_SOURCES = copy.deepcopy(SOURCES)
NV_SOURCES["builds"]["jp6-cu126"][0].update(apt_needs=["libopenblas-dev"], pip_constraints=["numpy<2"])


@pytest.mark.parametrize("holds, pin, pip_packages", [
    ([NV_WHEEL], NV_WHEEL, ["numpy<2"]),           # a lab's index holding NVIDIA's wheel: that build, its needs
    (["2.5.0"], "2.5.0", []),                       # a copy of the community index from when it served 2.5.0
    (None, "2.5.0", []),                            # not read yet (the preflight's first look): the community's number
])
def test_an_index_mirror_is_pinned_by_what_it_holds(holds, pin, pip_packages):
    got = choose(NV_PLANNED, {"source": "mirror", "mirror_url": "http://mirror.lab/jp6/+simple", "mirror_kind": "index"},
                 NV_SOURCES, today=TODAY, holds=holds)
    assert got["ok"] and got["pin"] == pin and got["pytorch"]["version"] == pin
    assert got["pytorch"]["index_url"] == "http://mirror.lab/jp6/+simple" and got["pip_packages"] == pip_packages


def test_an_index_mirror_without_the_plans_build_says_what_it_must_hold_and_what_works():
    got = choose(NV_PLANNED, {"source": "mirror", "mirror_url": "http://mirror.lab/jp6/+simple", "mirror_kind": "index"},
                 NV_SOURCES, today=TODAY, holds=["2.8.0", "2.10.0"])
    found = check_listing(COMMUNITY_PAGE, got, python="3.10")
    assert not found["ok"]
    text = found["errors"][0]
    assert "has no torch 2.5.0 wheel for Python 3.10" in text and "plan a PyTorch it has" not in text
    assert "holds NVIDIA's build torch %s" % NV_WHEEL in text and "last seen serving torch 2.8.0 (2025-10-27)" in text
    assert "jetpack_pytorch_mirror_kind: find_links" in text and text.endswith("Nothing was changed.")


# --- torchvision on JetPack 6 (issue 52 L-1) -------------------------------------------------------------------------
def test_a_jetson_plan_with_pytorch_and_no_torchvision_says_why():
    """NVIDIA publishes no torchvision for its jp/v60 and jp/v61 torch (data/compat.yml jetson_pytorch, sourced): the
    plan keeps torchvision null and its warning says so and which release to build (PyTorch's pairing)."""
    routes = load_compat()["jetson_pytorch"]
    for key, release in (("jetson-ai-lab-jp6", "0.20"), ("nvidia-jp60", "0.19")):
        assert "No torchvision in the plan" in routes[key]["warning"], key
        assert "build torchvision %s" % release in routes[key]["warning"], key
    golden = ROOT / "tests" / "unit" / "golden"
    checked = 0
    for path in sorted(golden.glob("jetson-*.json")):
        plan = __import__("json").loads(path.read_text(encoding="utf-8"))
        pytorch = plan["stack"].get("pytorch") or {}
        if pytorch.get("version") and pytorch.get("torchvision") is None:
            checked += 1
            assert any("No torchvision in the plan" in w for w in plan["warnings"]), path.name
    assert checked >= 3
