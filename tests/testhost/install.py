"""Copy the GPU/vLLM test doubles into a test host's overlay before it boots.

Layout inside the host (all of it clearly a double, never product code):
  /usr/local/lib/gpu-double/doubles/*.py   the double modules (package `doubles`)
  /usr/local/lib/gpu-double/vllm_double_pkg/vllm/   the `vllm` modules the deploy job's
                                           preflight imports (on the host Python's path
                                           through a .pth file, as a pip install would be)
  /usr/local/bin/nvidia-smi                sh wrapper running the nvidia-smi double
  /usr/local/bin/vllm                      a Python entry-point script, as pip writes one
                                           (`#!python`), running the vLLM double
  /etc/gpu-double/config.json              GPU count/model, vLLM double knobs
  /opt/vllm/bin/vllm, user and group vllm  what the seed's units (and the demo profiles)
                                           name: `User=vllm`, `/opt/vllm/bin/vllm serve`
  /etc/tmpfiles.d/gpu-double.conf          the GPU state directory, writable by every
                                           user like /dev/shm (a real GPU serves any user)
The vLLM flag catalogs are bind-mounted read-only at their checkout path, so the double
reads exactly what the generator committed, live.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

DOUBLES_SRC = Path(__file__).resolve().parent.parent / "doubles"
REPO_ROOT = Path(__file__).resolve().parents[2]
CATALOG_DIR = REPO_ROOT / "linting/vllm/catalogs"
FIXTURE_CATALOG_DIR = DOUBLES_SRC / "fixtures"
HOST_LIB = "/usr/local/lib/gpu-double"
HOST_CONFIG = "/etc/gpu-double/config.json"

_WRAPPER = """#!/bin/sh
# TEST DOUBLE installed by specadmin tests/testhost: not the real {tool}.
PYTHONPATH={lib} exec {python} -m doubles.{module} "$@"
"""
# What pip writes for a console-script entry point (its first line names the Python that
# has the package), so tools that look for vLLM's Python find one.
_ENTRY_POINT = """#!{python}
# TEST DOUBLE installed by specadmin tests/testhost: not the real {tool}.
import sys
sys.path.insert(0, {lib!r})
from doubles.{module} import main
sys.exit(main())
"""
VLLM_PACKAGE_SRC = DOUBLES_SRC / "vllm_double_pkg"


def double_config(
    *,
    name: str,
    gpu_count: int = 8,
    catalog_dirs: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The host's /etc/gpu-double/config.json; `overrides` is merged one level deep."""
    config: dict[str, Any] = {
        "gpu_count": gpu_count,
        "name": "NVIDIA H200",
        "memory_total_mib": 143771,
        "uuid_seed": name,
        "state_dir": "/run/gpu-double",
        "vllm": {"catalog_dirs": catalog_dirs or [str(CATALOG_DIR)]},
    }
    for key, value in (overrides or {}).items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = config[key] | value
        else:
            config[key] = value
    return config


def _put_on_python_path(root: Path, python: str, directory: str) -> None:
    """A .pth file in the host Python's site directory (site(7)), when that Python is the
    machine's own binary at the same path (overlay of `/`): elsewhere the host has no
    importable `vllm` and the preflight check skips, as on a host where vLLM runs from a
    wrapper script."""
    if not (root / python.lstrip("/")).resolve().exists() or not Path(python).exists():
        return
    try:
        site_dir = subprocess.run(
            [python, "-c", "import site; print(site.getsitepackages()[0])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return
    target = root / site_dir.lstrip("/")
    if not site_dir.startswith("/") or not (root / "usr").exists():
        return
    target.mkdir(parents=True, exist_ok=True)
    (target / "specadmin-vllm-double.pth").write_text(directory + "\n")


def _seed_layout(root: Path, state_dir: str) -> None:
    """The seed host's account and vLLM path, and GPU state any user's process may hold.

    /run is a fresh tmpfs at every boot, so the state directory comes from tmpfiles.d
    (tmpfiles.d(5): `d PATH MODE USER GROUP`).
    """
    tmpfiles = root / "etc/tmpfiles.d/gpu-double.conf"
    tmpfiles.parent.mkdir(parents=True, exist_ok=True)
    tmpfiles.write_text(f"d {state_dir} 1777 root root -\n")
    link = root / "opt/vllm/bin/vllm"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to("/usr/local/bin/vllm")
    # --root writes the overlay's /etc/passwd, /etc/group and /etc/shadow, never the
    # machine's; exit status 9 means the lower root already has the account.
    done = subprocess.run(
        [
            "useradd",
            "--root",
            str(root),
            "--system",
            "--user-group",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "vllm",
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 9):
        raise RuntimeError(f"useradd vllm in {root}: {done.stderr.strip()}")


def install_doubles(
    root: Path,
    *,
    python: str,
    name: str,
    gpu_count: int = 8,
    config: dict[str, Any] | None = None,
) -> list[str]:
    """Install into the overlay at `root`; returns extra systemd-nspawn arguments."""
    lib = root / HOST_LIB.lstrip("/") / "doubles"
    lib.mkdir(parents=True, exist_ok=True)
    for src in DOUBLES_SRC.glob("*.py"):
        shutil.copyfile(src, lib / src.name)
    if FIXTURE_CATALOG_DIR.is_dir():
        shutil.copytree(FIXTURE_CATALOG_DIR, lib / "fixtures", dirs_exist_ok=True)
    bin_dir = root / "usr/local/bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool, module, template in (
        ("nvidia-smi", "nvidia_smi_double", _WRAPPER),
        ("vllm", "vllm_double", _ENTRY_POINT),
    ):
        path = bin_dir / tool
        path.write_text(template.format(tool=tool, lib=HOST_LIB, python=python, module=module))
        path.chmod(0o755)
    shutil.copytree(
        VLLM_PACKAGE_SRC,
        root / HOST_LIB.lstrip("/") / "vllm_double_pkg",
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    _put_on_python_path(root, python, f"{HOST_LIB}/vllm_double_pkg")
    cfg = double_config(name=name, gpu_count=gpu_count, overrides=config)
    cfg_path = root / HOST_CONFIG.lstrip("/")
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    _seed_layout(root, cfg["state_dir"])
    args = []
    if CATALOG_DIR.is_dir():
        args.append(f"--bind-ro={CATALOG_DIR}")
    return args
