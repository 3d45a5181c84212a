"""The build backend of kairos-client (PEP 517, in-tree): a wheel and an
sdist made with the standard library alone, so that
``pip install ./clients/python`` needs nothing from a package index, not
even setuptools. It reads the ``[project]`` table of pyproject.toml and
packs the ``kairos_client`` package."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "kairos_client"


def _project() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _dist_name(p: dict) -> str:
    return p["name"].replace("-", "_")


def _metadata(p: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}"]
    if "description" in p:
        lines.append(f"Summary: {p['description']}")
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    lic = p.get("license", {})
    if isinstance(lic, dict) and "text" in lic:
        lines.append(f"License: {lic['text']}")
    readme = ROOT / "README.md"
    body = ""
    if readme.exists():
        lines.append("Description-Content-Type: text/markdown")
        body = "\n" + readme.read_text(encoding="utf-8")
    return "\n".join(lines) + "\n" + body


def _package_files() -> list[Path]:
    return sorted(f for f in (ROOT / PACKAGE).rglob("*")
                  if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc")


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _wheel(wheel_directory: str, files: dict[str, bytes]) -> str:
    p = _project()
    dist = f"{_dist_name(p)}-{p['version']}"
    info = f"{dist}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata(p).encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: kairos_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [_record_line(n, d) for n, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0)), d)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {f.relative_to(ROOT).as_posix(): f.read_bytes() for f in _package_files()})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # a .pth file puts this folder on sys.path: edits show without a reinstall
    return _wheel(wheel_directory, {f"__editable__.{PACKAGE}.pth": (str(ROOT) + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    dist = f"{_dist_name(p)}-{p['version']}"
    name = f"{dist}.tar.gz"
    paths = [ROOT / "pyproject.toml", ROOT / "README.md", Path(__file__).resolve()] + _package_files()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for f in paths:
            if f.exists():
                t.add(f, arcname=f"{dist}/{f.relative_to(ROOT).as_posix()}")
        info = tarfile.TarInfo(f"{dist}/PKG-INFO")
        data = _metadata(p).encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name
