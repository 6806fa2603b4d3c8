"""A Docker engine, an offline base image and the Strata image, for the compose suite.

No image registry is reachable here, so the base image is a minimal Debian
bookworm made with ``debootstrap`` from the mirror apt uses and ``docker
import``-ed; the Strata image is built from it with ``deploy/docker/Dockerfile``
(its ``apt-get`` and ``pip`` steps use Debian's mirror and PyPI through the
host's network). The root file system is cached as a tarball under
``$STRATA_DEPLOY_CACHE`` (default ``~/.cache/strata-deploy``); Docker's own
layer cache keeps later image builds short.

``docker_engine()`` uses a running engine, or starts ``dockerd`` for the
suite -- without its bridge or iptables rules: every container of the suite
uses the host's network on 127.0.0.1 -- and stops it afterwards.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.harness import REPO

CACHE = Path(os.environ.get("STRATA_DEPLOY_CACHE") or Path.home() / ".cache" / "strata-deploy")
BASE_IMAGE = "strata-base:bookworm"
DOCKERFILE = REPO / "deploy" / "docker" / "Dockerfile"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
LOCAL_CA_DIR = Path("/usr/local/share/ca-certificates")


def run(cmd: Sequence[str], *, timeout: float = 600, log: Path | None = None, **kwargs: Any) -> str:
    """Run ``cmd``; its output goes to ``log`` if given (and is returned otherwise). Raises on failure."""
    if log is not None:
        with log.open("ab") as out:
            shown = " ".join(a if len(a) < 200 else a[:40] + "..." for a in cmd)
            out.write(f"$ {shown}\n".encode())
            out.flush()
            result = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, **kwargs)
        if result.returncode != 0:
            tail = log.read_text(errors="replace")[-4000:]
            raise RuntimeError(f"{' '.join(cmd[:3])} ... exited {result.returncode}:\n{tail}")
        return ""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return str(proc.stdout)


def _sudo() -> list[str]:
    return [] if os.geteuid() == 0 else ["sudo", "-n"]


def compose_command() -> list[str] | None:
    """``docker compose`` (v2 plugin) if it works, else ``docker-compose`` (v1), else None."""
    if shutil.which("docker") is not None:
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    v1 = shutil.which("docker-compose")
    return [v1] if v1 is not None else None


def ensure_packages(log: Path) -> None:
    """apt-get install the Docker engine, Compose and debootstrap where missing (Debian's packages)."""
    missing = [pkg for pkg, binary in (("docker.io", "dockerd"), ("debootstrap", "debootstrap")) if not shutil.which(binary)]
    if compose_command() is None:
        missing.append("docker-compose")
    if not missing:
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    run([*_sudo(), "apt-get", "update", "-q"], log=log, env=env)
    run([*_sudo(), "apt-get", "install", "-y", "-q", *missing], log=log, env=env, timeout=1200)


def _engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0


@contextlib.contextmanager
def docker_engine(log: Path) -> Iterator[None]:
    """A Docker engine for the block: the running one, or a ``dockerd`` started (and stopped) here."""
    if _engine_answers():
        yield
        return
    if os.geteuid() != 0:
        raise RuntimeError("no Docker engine answers and starting dockerd needs root: start one (systemctl start docker)")
    with log.open("ab") as out:
        # No docker0 bridge, no iptables/NAT rules: the suite's containers all use the host's network.
        proc = subprocess.Popen(
            ["dockerd", "--bridge=none", "--iptables=false", "--ip-masq=false", "--host=unix:///var/run/docker.sock"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while not _engine_answers():
            if proc.poll() is not None:
                raise RuntimeError(f"dockerd exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"dockerd did not answer in 90 s:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        yield
    finally:
        proc.send_signal(signal.SIGTERM)  # dockerd stops its containerd and containers itself
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def apt_mirror() -> str:
    """The Debian mirror apt uses for bookworm (sources.list or deb822 .sources), else deb.debian.org."""
    files = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for f in files:
        try:
            text = f.read_text()
        except OSError:
            continue
        if f.suffix == ".sources":
            for block in re.split(r"\n\s*\n", text):
                fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", block, re.M))
                if "bookworm" in fields.get("Suites", "").split() and "main" in fields.get("Components", "").split():
                    for uri in fields.get("URIs", "").split():
                        if uri.rstrip("/").endswith("/debian"):
                            return uri.rstrip("/")
        else:
            for line in text.splitlines():
                m = re.match(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s+.*\bmain\b", line)
                if m and m.group(1).rstrip("/").endswith("/debian"):
                    return m.group(1).rstrip("/")
    return DEFAULT_MIRROR


def ensure_base_image(log: Path) -> None:
    """``strata-base:bookworm``: a debootstrap'ed minimal Debian, imported (built once, then cached)."""
    if subprocess.run(["docker", "image", "inspect", BASE_IMAGE], capture_output=True, timeout=60).returncode == 0:
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / "debian-bookworm-minbase.tar"
    if not tarball.exists():
        rootfs = CACHE / "rootfs"
        if rootfs.exists():
            shutil.rmtree(rootfs)
        run([*_sudo(), "debootstrap", "--variant=minbase", "bookworm", str(rootfs), apt_mirror()], log=log, timeout=1200)
        partial = tarball.with_suffix(".partial")
        run([*_sudo(), "tar", "-C", str(rootfs), "-cf", str(partial), "."], log=log)
        partial.rename(tarball)
        run([*_sudo(), "rm", "-rf", str(rootfs)], log=log)
    run(["docker", "import", str(tarball), BASE_IMAGE], log=log)


def build_image(tag: str, log: Path) -> None:
    """Build the Strata image from the repository, as a user would, on the offline base image."""
    cmd = [
        "docker", "build", "--network", "host", "--force-rm",
        "--build-arg", f"BASE_IMAGE={BASE_IMAGE}",
        "-f", str(DOCKERFILE), "-t", tag, str(REPO),
    ]  # fmt: skip
    # A machine whose egress re-signs TLS trusts an extra CA; the build has to as well.
    certs = "".join(p.read_text() for p in sorted(LOCAL_CA_DIR.rglob("*.crt"))) if LOCAL_CA_DIR.is_dir() else ""
    if certs:
        cmd[-1:-1] = ["--build-arg", f"EXTRA_CA_CERTS={certs}"]
    run(cmd, log=log, timeout=3600)
