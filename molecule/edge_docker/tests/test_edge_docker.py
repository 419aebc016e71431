"""playbooks/edge.yml with Docker on the FIXTURE Jetson (molecule/edge_docker/molecule.yml): Ubuntu's REAL docker.io,
JetPack's nvidia-container runtime as a FIXTURE stand-in that follows NVIDIA's csv mode and execs the real runc. A pass
says Docker is set up as jetson-containers expects (nvidia the default runtime) and that a plain `docker run` goes
through that runtime, not that a Jetson GPU works in a container."""

import ast
import json
import re

LIB = "/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1.1"
LOG = "/run/nvidia-container-runtime.fixture.log"
# No network for the test's containers: Docker 28 writes the container interface's IPv6 sysctls, which an unprivileged
# test container cannot ("failed to disable IPv6 on container's interface eth0"); the runtime path is the same.
RUN = "docker run --rm --network none"


def test_docker_names_nvidia_its_default_runtime(host):
    info = json.loads(host.check_output("docker info --format '{{json .}}'"))
    assert info["DefaultRuntime"] == "nvidia", info["DefaultRuntime"]
    assert "nvidia" in info["Runtimes"] and "runc" in info["Runtimes"]
    daemon = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert daemon["default-runtime"] == "nvidia"
    assert daemon["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"


def mounted_lists(log):
    """Each `create` of the stand-in runtime in csv mode logs "...; mounted [<paths>]": the lists, in order."""
    return [ast.literal_eval(m) for m in re.findall(r"; mounted (\[[^\]]*\])$", log, re.M)]


def test_a_plain_docker_run_with_devices_requested_gets_the_csv_library(host):
    out = host.run(RUN + " -e NVIDIA_VISIBLE_DEVICES=all dlbox-tiny:latest /busybox cat %s" % LIB)
    assert out.rc == 0, out.stderr
    assert out.stdout.startswith("FIXTURE: the module's libcuda"), out.stdout
    # read-only, as the toolkit mounts host files: the same container can read it and cannot write it
    out = host.run(RUN + " -e NVIDIA_VISIBLE_DEVICES=all dlbox-tiny:latest /busybox sh -c "
                   "'/busybox test -r %s && echo readable; /busybox touch %s || echo read-only'" % (LIB, LIB))
    assert out.rc == 0 and out.stdout.split() == ["readable", "read-only"], (out.stdout, out.stderr)
    log = host.file(LOG).content_string
    lists = mounted_lists(log)
    assert lists and all(found == [LIB] for found in lists), log  # only what exists on the host
    # the device the host lacks: skipped with the toolkit's warning, in no mount list
    assert "warning: could not locate /dev/nvhost-ctrl-gpu (l4t.csv, dev)" in log, log


def test_without_devices_requested_nothing_is_mounted(host):
    before = host.file(LOG).content_string.count("no devices requested")
    # the same image and command that read the library above: it runs, and the library is not there
    out = host.run(RUN + " dlbox-tiny:latest /busybox sh -c '/busybox echo ran; /busybox test -e %s || echo absent'" % LIB)
    assert out.rc == 0 and out.stdout.split() == ["ran", "absent"], (out.stdout, out.stderr)
    assert host.file(LOG).content_string.count("no devices requested") == before + 1
