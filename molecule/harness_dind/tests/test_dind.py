"""The Docker-in-Docker variant: an engine runs inside the test container and runs containers."""


def test_docker_service_running(host):
    svc = host.service("docker")
    assert svc.is_running and svc.is_enabled


def test_inner_container_runs(host):
    out = host.run("docker run --rm dlbox-tiny:latest /busybox echo dlbox-inner-ok")
    assert out.rc == 0, out.stderr
    assert out.stdout.strip() == "dlbox-inner-ok"


def test_inner_engine_uses_a_real_storage_driver(host):
    driver = host.run("docker info --format '{{.Driver}}'").stdout.strip()
    assert driver in ("overlay2", "vfs", "fuse-overlayfs"), driver
