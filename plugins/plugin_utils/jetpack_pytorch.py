# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a Jetson's PyTorch comes from (edge.yml; controller only, pure).

The plan names PyTorch for the module (``stack.pytorch``: version, the Jetson build ``variant`` such as
``jp6-cu126``); ``data/jetson.yml`` (``pytorch_sources``) lists, per build and most trusted first, the sources that
serve it: NVIDIA's own folder of wheels, then the community index, each with the exact torch it serves and the date
it was last confirmed. A lab's mirror or wheelhouse copies one of them.

- :func:`choose` -> the source, the exact torch to pin, the python_env settings, warnings (a source graded U or
  confirmed long ago) and refusals (each naming the variable).
- :func:`parse_listing`: the HTML of a PEP 503 project page or of a folder listing -> the torch wheels in it::

      '<a href="torch-2.8.0-cp310-cp310-linux_aarch64.whl#sha256=ab">' -> [{"version": "2.8.0", "python": "cp310",
      "platform": "linux_aarch64", "filename": ...}]

- :func:`check_listing`: whether the listing holds the pinned wheel; if not, a refusal that offers what it has.

A build may load libraries JetPack does not ship (NVIDIA's jp/v61 torch: ``libcusparseLt.so.0``; the community
index's torch 2.8: ``libcudss.so.0``): a source names them in ``needs``, ``pytorch_sources.libraries`` says where each
comes from (NVIDIA's archive and its sha256) or why the role cannot install it; :func:`choose` returns the ones to
install, and refuses a source that needs one the role cannot install, before any change.
"""

from __future__ import annotations

import datetime
import re
from urllib.parse import unquote, urlparse

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

# The argument spec's choices, the one place they live (issue 47); KINDS is data/jetson.yml's vocabulary.
CHOICES = _spec.choices("jetpack", "jetpack_pytorch_source")
MIRROR_KINDS = _spec.choices("jetpack", "jetpack_pytorch_mirror_kind")
KINDS = ("index", "find_links")

_HREF_RE = re.compile(r"""href\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_WHEEL_RE = re.compile(r"^torch-(?P<version>[^-]+)-(?P<python>[^-]+)-(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_URL_RE = re.compile(r"^(https?|file)://\S+$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_SONAME_RE = re.compile(r"^lib[A-Za-z0-9_+-]+\.so(\.\d+)*$")


def check_sources(section, need):
    """Check ``pytorch_sources`` of data/jetson.yml; ``need(condition, where, what)`` raises naming the key."""
    need(isinstance(section, dict), "pytorch_sources", "must be a mapping {max_age_days, builds, retired}")
    need(isinstance(section.get("max_age_days"), int) and section["max_age_days"] > 0, "pytorch_sources.max_age_days",
         "must be a positive integer")
    builds = section.get("builds")
    need(isinstance(builds, dict) and builds, "pytorch_sources.builds", "must be a non-empty mapping variant -> sources")
    for variant, sources in builds.items():
        need(isinstance(sources, list) and sources, "pytorch_sources.builds.%s" % variant, "must be a non-empty list")
        for index, source in enumerate(sources):
            where = "pytorch_sources.builds.%s[%d]" % (variant, index)
            need(isinstance(source, dict), where, "must be a mapping")
            need(source.get("name") in ("nvidia", "community"), where, "needs 'name' nvidia or community")
            need(source.get("kind") in KINDS, where, "needs 'kind' index or find_links")
            for key in ("url", "torch", "python", "source", "grade"):
                need(isinstance(source.get(key), str) and source[key].strip(), where, "needs '%s' (text)" % key)
            need(_URL_RE.match(source["url"]), where, "needs 'url' as an http(s):// or file:// URL")
            need(isinstance(source.get("confirmed"), str) and _DATE_RE.match(source["confirmed"]), where,
                 "needs 'confirmed' as a quoted date")
            for key in ("apt_needs", "components_needed", "pip_constraints"):
                need(isinstance(source.get(key, []), list) and all(isinstance(x, str) and x.strip()
                                                                   for x in source.get(key, [])), where,
                     "'%s' must be a list of names (text)" % key)
            needs = source.get("needs", [])
            need(isinstance(needs, list) and all(name in (section.get("libraries") or {}) for name in needs), where,
                 "'needs' must list libraries of pytorch_sources.libraries")
    for name, library in (section.get("libraries") or {}).items():
        where = "pytorch_sources.libraries.%s" % name
        need(isinstance(library, dict) and _SONAME_RE.match(str(library.get("soname") or "")), where,
             "needs 'soname' like libcusparseLt.so.0")
        need(isinstance(library.get("source"), str) and library["source"].strip(), where, "needs a 'source'")
        if library.get("url") is None:
            need(isinstance(library.get("reason"), str) and library["reason"].strip(), where,
                 "without 'url' it needs the 'reason' the role cannot install it")
            continue
        need(_URL_RE.match(str(library["url"])) and str(library["url"]).endswith(".tar.xz"), where,
             "needs 'url', the http(s):// URL of NVIDIA's .tar.xz archive")
        need(_SHA256_RE.match(str(library.get("sha256") or "")), where, "needs 'sha256', 64 lower-case hex digits")
        need(isinstance(library.get("version"), str) and library["version"].strip(), where, "needs 'version' (text)")
    for index, gap in enumerate(section.get("gaps") or []):
        where = "pytorch_sources.gaps[%d]" % index
        need(isinstance(gap, dict) and isinstance(gap.get("jetpack"), str), where, "needs 'jetpack' (a quoted version)")
        for key in ("reason", "source", "grade"):
            need(isinstance(gap.get(key), str) and gap[key].strip(), where, "needs '%s' (text)" % key)
        need(isinstance(gap.get("date"), str) and _DATE_RE.match(gap["date"]), where, "needs 'date' as a quoted date")
    for index, entry in enumerate(section.get("retired") or []):
        need(isinstance(entry, dict) and isinstance(entry.get("host"), str) and isinstance(entry.get("source"), str),
             "pytorch_sources.retired[%d]" % index, "needs 'host' and 'source'")


def _release(version):
    """``2.5.0a0+872d972e41.nv24.08`` -> ``(2, 5, 0)``: the release a build (pre-release, local label) belongs to."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", str(version or ""))
    return tuple(int(part or 0) for part in match.groups()) if match else None


def _pypi_number(version):
    """The plan's torch as an index numbers it: NVIDIA's build ``2.5.0a0+872d972e41.nv24.08.17622132`` -> ``2.5.0``;
    a PyPI version (``2.8.0``) unchanged."""
    text = str(version or "")
    return ".".join(str(part) for part in _release(text)) if re.search(r"a0\+|\.nv\d", text) and _release(text) else text


def _retired(url, retired):
    host = urlparse(url or "").hostname or ""
    return next((entry for entry in retired or [] if host == entry["host"]), None)


def _age_days(confirmed, today):
    try:
        return (today - datetime.date.fromisoformat(confirmed)).days
    except ValueError:
        return None


def _libraries(names, section, mirror, copies_at=""):
    """The libraries ``names`` (a source's ``needs``) -> ``(to_install, refusals, warnings)``.

    ``to_install``: ``{"name", "soname", "version", "url", "sha256", "folder"}`` for each the role installs (``folder``:
    ``<name>-<version>``, where its archive is unpacked); ``copies_at`` (``jetpack_pytorch_libraries_url``) is a folder
    holding NVIDIA's archives under their own names, taken instead of NVIDIA's URL (the same sha256). A library without
    an archive is a refusal (the wheel cannot load). For a lab's mirror they are warnings: without ``copies_at`` nothing
    is fetched from NVIDIA (a mirror is often the only source a lab can reach).
    """
    known = section.get("libraries") or {}
    install, said = [], []
    for name in names or []:
        library = known[name]
        if not library.get("url"):
            said.append("%s (%s: %s)" % (library["soname"], name, library["reason"]))
        elif mirror and not copies_at:
            said.append("%s (%s: NVIDIA's archive %s is fetched only with jetpack_pytorch_libraries_url, a folder "
                        "holding it, for a mirror)" % (library["soname"], name, library["url"].rsplit("/", 1)[-1]))
        else:
            url = ("%s/%s" % (copies_at.rstrip("/"), library["url"].rsplit("/", 1)[-1])) if copies_at else library["url"]
            install.append({"name": name, "soname": library["soname"], "version": library["version"],
                            "url": url, "sha256": library["sha256"], "folder": "%s-%s" % (name, library["version"])})
    return install, ([] if mirror else said), (said if mirror else [])


def _gap(section, jetpack):
    """The data's word on a JetPack without a PyTorch build (``pytorch_sources.gaps``) for the plan's module, or None."""
    jetpack = jetpack or {}
    for gap in section.get("gaps") or []:
        if str(gap["jetpack"]) == str(jetpack.get("version")) and (
                not gap.get("families") or jetpack.get("family") in gap["families"]):
            return gap
    return None


def choose(pytorch, options, section, today=None, jetpack=None, holds=None):
    """The source of the plan's PyTorch on a Jetson.

    ``pytorch``: the plan's ``stack.pytorch``; ``options``: ``source`` (``jetpack_pytorch_source``: auto, nvidia,
    community, mirror), ``mirror_url``, ``mirror_kind`` (index or find_links), ``libraries_url``; ``section``:
    ``pytorch_sources`` of data/jetson.yml; ``today``: a ``datetime.date`` (the age of the confirmations).

    ``options`` may also hold ``components`` (``jetpack_components``): a source's ``components_needed`` missing from
    it (and no ``all``) is refused.

    ``holds``: the torch versions a lab's index mirror lists (:func:`listing_versions`), once read. An index mirror
    copies the community index (the plan's release as that index numbers it, 2.5.0), unless it holds the plan's exact
    build of NVIDIA's folder (a lab that put NVIDIA's jp/v61 wheel into its own PEP 503 index): then it is pinned to
    that build and takes what NVIDIA's wheel needs (cuSPARSELt, libopenblas, numpy<2), as a copy of NVIDIA's folder does.

    Returns ``{"ok", "errors", "warnings", "source", "pytorch", "find_links", "listing_url", "pin", "libraries",
    "apt_packages", "pip_packages"}``: ``apt_packages`` the distribution's packages the wheel loads (the source's
    ``apt_needs``, installed before pip), ``pip_packages`` requirements beside torch (``pip_constraints``, numpy<2);
    ``libraries`` those the wheel loads that JetPack lacks and the role installs first (pytorch_sources.libraries);
    ``source`` the
    chosen one (``name``, ``kind``, ``url``, ``confirmed``, ``grade``; ``plan`` for PyTorch's own wheels, which the plan
    takes from PyTorch's index for a build that is not a Jetson one); ``pytorch`` the plan's entry with the exact
    version to pin and the index pip takes (None for a folder of wheels); ``find_links`` the folders to add to pip's;
    ``listing_url`` the page that must list the wheel (``<index>/torch/`` or the folder); ``pin`` the wheel's version.
    """
    today = today or datetime.date.today()
    errors, warnings = [], []
    out = {"ok": False, "errors": errors, "warnings": warnings, "source": None, "pytorch": None, "find_links": [],
           "listing_url": None, "pin": None, "libraries": [], "apt_packages": [], "pip_packages": []}
    choice = options.get("source") or "auto"
    if choice not in CHOICES:
        errors.append("jetpack_pytorch_source is %r; choose one of %s." % (choice, ", ".join(CHOICES)))
        return out
    if not isinstance(pytorch, dict) or not pytorch.get("version"):
        gap = _gap(section, jetpack)
        if gap:
            errors.append("JetPack %s on %s has no PyTorch build to install: %s (data/jetson.yml pytorch_sources.gaps, "
                          "as of %s). Set dlbox_edge_python_env to false and bring PyTorch yourself (a source build or a "
                          "container), or run a JetPack with a PyTorch build. Nothing was changed."
                          % (gap["jetpack"], (jetpack or {}).get("device") or (jetpack or {}).get("family") or "this module",
                             gap["reason"], gap["date"]))
            return out
        errors.append("The plan (dlbox_plan) has no PyTorch for this Jetson (stack.pytorch; see the plan's warnings): "
                      "set dlbox_edge_python_env to false, or plan a JetPack with a PyTorch build. Nothing was changed.")
        return out
    variant = pytorch.get("variant")
    sources = (section.get("builds") or {}).get(variant) or []
    if not sources and pytorch.get("index_url") and choice == "auto":
        # not a Jetson build: PyTorch's own aarch64 wheels (JetPack 7 on Thor), from the plan's index as planned; pip
        # pins them with the variant's local label (2.15.0+cu130), as python_env does
        local = variant if variant and re.match(r"^(cu\d+|cpu)$", variant) else None
        source = {"name": "plan", "kind": "index", "url": pytorch["index_url"].rstrip("/"), "confirmed": None, "grade": None}
        out.update(ok=True, source=source, pytorch=dict(pytorch), find_links=[],
                   listing_url=source["url"] + "/torch/",
                   pin="%s+%s" % (pytorch["version"], local) if local else pytorch["version"])
        return out
    if not sources:
        errors.append("data/jetson.yml names no source for the plan's PyTorch build '%s' (pytorch_sources.builds has %s); "
                      "give a mirror or wheelhouse that holds torch %s: jetpack_pytorch_source: mirror and "
                      "jetpack_pytorch_mirror_url. Nothing was changed."
                      % (variant, ", ".join(sorted(section.get("builds") or {})) or "none", pytorch["version"]))
        return out
    by_name = {source["name"]: source for source in sources}
    if choice == "mirror":
        url = (options.get("mirror_url") or "").strip()
        kind = options.get("mirror_kind") or "index"
        if not _URL_RE.match(url):
            errors.append("jetpack_pytorch_mirror_url is %r; jetpack_pytorch_source: mirror needs the http(s):// or file:// "
                          "URL of a lab mirror of the community index (jetpack_pytorch_mirror_kind: index) or of a folder "
                          "of wheels (find_links). Nothing was changed." % (options.get("mirror_url") or ""))
            return out
        if kind not in MIRROR_KINDS:
            errors.append("jetpack_pytorch_mirror_kind is %r; choose index (a PEP 503 index, pip's --index-url) or "
                          "find_links (a folder of wheels). Nothing was changed." % (kind,))
            return out
        # an index mirror copies the community index (the plan's version), or holds NVIDIA's exact build (a lab's own
        # index with NVIDIA's wheel in it: issue 52 M-D); a folder copies NVIDIA's wheels
        nvidia_build = (by_name.get("nvidia") or {}).get("torch")
        exact = kind == "index" and nvidia_build == pytorch["version"] and pytorch["version"] in (holds or [])
        upstream = by_name.get("community" if kind == "index" and not exact else "nvidia") or sources[0]
        source = {"name": "mirror", "kind": kind, "url": url.rstrip("/") if kind == "index" else url,
                  "confirmed": None, "grade": None, "copies": upstream["name"], "needs": upstream.get("needs") or [],
                  "apt_needs": upstream.get("apt_needs") or [], "components_needed": upstream.get("components_needed") or [],
                  "pip_constraints": upstream.get("pip_constraints") or [],
                  "torch": upstream["torch"] if exact or kind == "find_links" else _pypi_number(pytorch["version"])}
    else:
        name = sources[0]["name"] if choice == "auto" else choice
        if name not in by_name:
            errors.append("jetpack_pytorch_source is '%s', but data/jetson.yml has no such source for the build '%s' "
                          "(it has %s). Nothing was changed." % (choice, variant, ", ".join(by_name)))
            return out
        source = dict(by_name[name])
    gone = _retired(source["url"], section.get("retired"))
    if gone:
        errors.append("%s points at %s, which has not served the Jetson AI Lab index since %s (%s); it moved to %s: use "
                      "that host, or a lab mirror that is up. Nothing was changed."
                      % ("jetpack_pytorch_mirror_url" if choice == "mirror" else "data/jetson.yml", gone["host"],
                         gone.get("since"), gone["source"], gone.get("moved_to")))
        return out
    copies_at = (options.get("libraries_url") or "").strip()
    if copies_at and not _URL_RE.match(copies_at):
        errors.append("jetpack_pytorch_libraries_url is %r; it must be the http(s):// or file:// URL of a folder holding "
                      "NVIDIA's archives under their own names, or empty for NVIDIA's. Nothing was changed." % copies_at)
        return out
    components = options.get("components")
    missing = [c for c in source.get("components_needed") or []
               if isinstance(components, list) and "all" not in components and c not in components]
    if missing:
        errors.append("jetpack_components is %s, without %s: the PyTorch of the source '%s' (%s) loads them (CUDA's and "
                      "cuDNN's libraries, data/jetson.yml pytorch_sources components_needed), so `import torch` would "
                      "fail. Add %s to jetpack_components (or use all), or set dlbox_edge_python_env to false. Nothing "
                      "was changed." % (components, " and ".join(missing), source["name"], source["url"],
                                        " and ".join(missing)))
        return out
    libraries, unloadable, unsure = _libraries(source.get("needs"), section, choice == "mirror", copies_at)
    if unloadable:
        errors.append("The PyTorch source '%s' (%s) serves a torch for the build '%s' that loads %s, which JetPack does not "
                      "ship and this role does not install (data/jetson.yml pytorch_sources.libraries): `import torch` "
                      "would fail. Choose another source (jetpack_pytorch_source: auto takes NVIDIA's own wheel), or a "
                      "lab mirror or wheelhouse whose build loads on this JetPack. Nothing was changed."
                      % (source["name"], source["url"], variant, "; ".join(unloadable)))
        out["source"] = {k: source.get(k) for k in ("name", "kind", "url", "confirmed", "grade")}
        return out
    warnings.extend("The mirror copies the %s source, whose build loads %s; the role does not install it: make sure the "
                    "host has it, or that the mirror's build does not need it." % (source.get("copies"), text)
                    for text in unsure)
    # a folder of wheels is pinned to the exact build it holds; an index to the plan's version (PyPI's numbering)
    # (an index numbers its builds as PyPI does: the plan's NVIDIA build 2.5.0a0+872d972e41.nv24.08 is torch 2.5.0 there)
    torch = source["torch"] if source["kind"] == "find_links" or source.get("copies") == "nvidia" \
        else _pypi_number(pytorch["version"])
    if _release(torch) != _release(pytorch["version"]):
        errors.append("The plan's PyTorch is %s, but the wheel of %s (%s) is torch %s, another release. Plan the "
                      "PyTorch that source has, or choose another source (jetpack_pytorch_source). Nothing was "
                      "changed." % (pytorch["version"], source["name"], source["url"], torch))
        return out
    if source["kind"] == "index" and source.get("confirmed") and _release(source["torch"]) != _release(pytorch["version"]):
        warnings.append("The %s index (%s) was last seen serving torch %s (%s), not the plan's %s: edge.yml reads the "
                        "index before any change and stops if the wheel is not there."
                        % (source["name"], source["url"], source["torch"], source["confirmed"], pytorch["version"]))
    age = _age_days(source["confirmed"], today) if source.get("confirmed") else None
    if source.get("grade") == "U" or (age is not None and age > section["max_age_days"]):
        warnings.append("The PyTorch source '%s' (%s) is unconfirmed: last confirmed %s (grade %s, data/jetson.yml); its "
                        "contents change. Keep a lab mirror or wheelhouse (jetpack_pytorch_source: mirror)."
                        % (source["name"], source["url"], source["confirmed"], source.get("grade")))
    entry = dict(pytorch, version=torch)
    if source["kind"] == "index":
        entry.update(index_url=source["url"], index_replaces_pypi=True)
        listing = source["url"].rstrip("/") + "/torch/"
        find_links = []
    else:
        entry.update(index_url=None)
        entry.pop("index_replaces_pypi", None)
        listing = source["url"]
        find_links = [source["url"]]
    if choice == "mirror" and source["kind"] == "index" and source.get("copies") == "community":
        out["mirror_hint"] = _index_mirror_hint(pytorch, by_name)
    out.update(ok=True, source={k: source.get(k) for k in ("name", "kind", "url", "confirmed", "grade")},
               pytorch=entry, find_links=find_links, listing_url=listing, pin=torch, libraries=libraries,
               apt_packages=list(source.get("apt_needs") or []), pip_packages=list(source.get("pip_constraints") or []))
    return out


def _index_mirror_hint(pytorch, by_name):
    """What an index mirror must hold for this plan, and what else works (issue 52 M-D): said when it lacks the wheel.

    JetPack 6's plan names NVIDIA's own build (data/compat.yml jetson_pytorch), and the community index, which an index
    mirror copies, numbers it by its release (2.5.0) but was last seen serving another (2.8.0): a copy of it taken since
    cannot serve the plan, and a plan cannot ask for another PyTorch on that JetPack.
    """
    nvidia, community = by_name.get("nvidia"), by_name.get("community")
    said = []
    if nvidia and nvidia.get("torch") == pytorch["version"]:
        said.append("An index mirror serves this plan when it holds NVIDIA's build torch %s (the plan's: put NVIDIA's "
                    "wheel from %s into the lab's index; pip then installs it by that exact version) or the community "
                    "index's torch %s." % (nvidia["torch"], nvidia["url"], _pypi_number(pytorch["version"])))
    if community and _release(community.get("torch")) != _release(pytorch["version"]):
        said.append("The community index (%s) was last seen serving torch %s (%s), not %s, so a copy of it taken since "
                    "cannot serve this plan, whose PyTorch is fixed by the JetPack (data/compat.yml jetson_pytorch)."
                    % (community["url"], community["torch"], community.get("confirmed"), _pypi_number(pytorch["version"])))
    if nvidia:
        said.append("What works instead: a copy of NVIDIA's folder (jetpack_pytorch_mirror_kind: find_links, "
                    "jetpack_pytorch_mirror_url at it) or NVIDIA's folder itself (jetpack_pytorch_source: auto).")
    return " ".join(said)


def listing_versions(html, python=None):
    """The torch versions a listing has for this Python on aarch64 (or any platform), in page order."""
    versions = []
    for wheel in parse_listing(html):
        if _fits(wheel, python) and wheel["version"] not in versions:
            versions.append(wheel["version"])
    return versions


def parse_listing(html):
    """The torch wheels a PEP 503 page or a folder listing links to, in page order (or of a list of file names: a
    wheelhouse folder on the host).

    Each: ``{"filename", "version", "python", "abi", "platform"}``; the link's ``#sha256=`` and URL escapes (``%2B``
    for ``+``) are undone; links to other files are left out.
    """
    wheels = []
    links = list(html) if isinstance(html, (list, tuple)) else _HREF_RE.findall(html or "")
    for href in links:
        name = unquote(href.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1])
        match = _WHEEL_RE.match(name)
        if match:
            wheels.append(dict(match.groupdict(), filename=name))
    return wheels


def _python_tags(python):
    major_minor = re.match(r"^(\d+)\.(\d+)", str(python or ""))
    tags = {"py3"}
    if major_minor:
        tags.add("cp%s%s" % major_minor.groups())
    return tags


def _fits(wheel, python):
    return (wheel["python"] in _python_tags(python) and
            (wheel["platform"] == "any" or wheel["platform"].endswith("aarch64")))


def check_listing(html, decision, python=None):
    """Whether the source's listing (``decision["listing_url"]``'s HTML) holds the pinned torch for this Python.

    Returns ``{"ok", "errors", "versions"}``; ``versions`` are the torch versions the listing has for this Python and
    aarch64 (or any platform), which the refusal offers.
    """
    pinned = decision.get("pin") or decision["pytorch"]["version"]
    versions = listing_versions(html, python)
    if pinned in versions:
        return {"ok": True, "errors": [], "versions": versions}
    source = decision["source"]
    # a lab's index mirror on a JetPack whose PyTorch is fixed (issue 52 M-D): what it must hold and what works instead,
    # not "plan a PyTorch it has", which such a plan cannot
    advice = decision.get("mirror_hint") or (
        "Its contents change (data/jetson.yml pytorch_sources): choose another source (jetpack_pytorch_source), give a lab "
        "mirror or wheelhouse that holds it (jetpack_pytorch_mirror_url), or plan a PyTorch it has.")
    return {"ok": False, "versions": versions, "errors": [
        "The PyTorch source '%s' (%s) has no torch %s wheel for Python %s on aarch64 (read from %s); it has %s. %s "
        "Nothing was changed."
        % (source["name"], source["url"], pinned, python or "?", decision["listing_url"],
           ", ".join(versions) if versions else "no torch wheel for it", advice)]}


def reach_answer(result):
    """One registered loop result of the preflight's look for an archive -> ``{"url", "ok", "answer"}``: a ``uri``
    HEAD (``status`` 200 is ok; -1 is no connection, its ``msg`` says why) or a ``stat`` of a file:// path; an entry
    already in that shape is kept.

    ``{"item": {"url": "https://x/a.tar.xz"}, "status": 404, "msg": "HTTP Error 404: Not Found"}`` ->
    ``{"url": "https://x/a.tar.xz", "ok": False, "answer": "HTTP 404 (HTTP Error 404: Not Found)"}``.
    """
    if "ok" in result and "url" in result and "item" not in result:
        return result
    url = (result.get("item") or {}).get("url")
    if "stat" in result:
        exists = bool((result.get("stat") or {}).get("exists"))
        return {"url": url, "ok": exists, "answer": "a file" if exists else "no such file on this host"}
    status = result.get("status")
    if status == 200:
        return {"url": url, "ok": True, "answer": "HTTP 200"}
    if status in (None, -1):
        return {"url": url, "ok": False, "answer": "no connection (%s)" % (result.get("msg") or "no answer")}
    return {"url": url, "ok": False, "answer": "HTTP %s (%s)" % (status, result.get("msg") or "")}


def check_reach(decision, answers):
    """Whether the host can fetch the archive of every library the wheel needs and the loader lacks (issue 52, third
    red team LOW 10): checked in the preflight, before any change, not when libraries.yml downloads it.

    ``answers``: one per archive the host looked for, as the preflight registered it (:func:`reach_answer`) or already
    ``{"url", "ok", "answer"}`` (``ok``: an http(s) HEAD answered 200, or a file:// path exists; ``answer``: what it
    got, for the message). Returns ``{"ok", "errors"}``; each error
    names the library, the URL and what answered, and jetpack_pytorch_libraries_url, the variable that points the role
    at another folder holding the same archive::

        ([{"url": "https://.../libcusparse_lt-linux-aarch64-0.8.1.1_cuda12-archive.tar.xz", "ok": False,
           "answer": "HTTP 404"}]) -> {"ok": False, "errors": ["The archive of libcusparseLt.so.0 ..."]}
    """
    by_url = {library["url"]: library for library in decision.get("libraries") or []}
    errors = []
    for answer in [reach_answer(result) for result in answers or []]:
        library = by_url.get(answer.get("url"))
        if library is None or answer.get("ok"):
            continue
        name = answer["url"].rsplit("/", 1)[-1]
        errors.append("The archive of %s (%s %s), which the chosen PyTorch wheel loads and JetPack does not ship, cannot "
                      "be fetched from this host: %s answered %s. Set jetpack_pytorch_libraries_url to a folder (http(s):// "
                      "or file://) this host reaches that holds %s (the same sha256, %s), or install the library where the "
                      "loader finds it. Nothing was changed."
                      % (library["soname"], library["name"], library["version"], answer["url"],
                         answer.get("answer") or "nothing", name, library["sha256"]))
    return {"ok": not errors, "errors": errors}
