"""Reads the operations of kairos's openapi.yaml with a line scanner (the
file's layout is fixed: "  /path:", "    get:", "      operationId: x"), so
that the tests need no YAML parser."""

from __future__ import annotations

import pathlib
import re

SPEC = pathlib.Path(__file__).resolve().parents[3] / "openapi.yaml"

# Operations the client has no method for, and why (as the Go client's spec test).
NOT_API_CALLS = {
    "metrics": "Prometheus text for a scraper",
    "adminPage": "HTML for a browser",
    "adminAsset": "the admin page's files",
    "getOpenAPI": "this document",
}


def operations(text: str | None = None) -> dict[str, tuple[str, str]]:
    """Returns {operationId: (METHOD, path)} of openapi.yaml."""
    if text is None:
        text = SPEC.read_text()
    ops: dict[str, tuple[str, str]] = {}
    path = method = None
    in_paths = False
    for line in text.splitlines():
        if re.fullmatch(r"paths:\s*", line):
            in_paths = True
            continue
        if in_paths and re.match(r"\S", line):
            in_paths = False
        if not in_paths:
            continue
        if m := re.fullmatch(r"  (/\S*):\s*", line):
            path, method = m[1], None
        elif m := re.fullmatch(r"    (get|put|post|patch|delete):\s*", line):
            method = m[1].upper()
        elif (m := re.fullmatch(r"      operationId:\s*(\w+)\s*", line)) and path and method:
            ops[m[1]] = (method, path)
    return ops


def snake(name: str) -> str:
    """createJobs -> create_jobs: the Python method of an operationId."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def schema_properties(name: str, text: str | None = None) -> list[str]:
    """Returns the property names of components.schemas[name] of openapi.yaml,
    sorted (the file's layout: "    Name:", "      properties:", "        field:")."""
    if text is None:
        text = SPEC.read_text()
    lines = text.splitlines()
    start = lines.index(f"    {name}:")
    props: list[str] = []
    in_props = False
    for line in lines[start + 1:]:
        if re.match(r" {0,4}\S", line):
            break  # the next schema
        if re.fullmatch(r"      properties:\s*", line):
            in_props = True
            continue
        if re.match(r"      \S", line):
            in_props = False
        if in_props and (m := re.fullmatch(r"        (\w+):\s*", line)):
            props.append(m[1])
    return sorted(props)
