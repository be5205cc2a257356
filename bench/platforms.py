"""Does the student's dependency set install on every student's machine? Resolved, wheels only,
for macOS arm64 and x86-64, Windows x86-64, Linux x86-64 and aarch64, each with Python 3.11, 3.12
and 3.13, without those machines: writes bench/results/platforms.md.

Two steps per platform and Python, because pip evaluates environment markers for the machine it
runs on, not for the target (so `pip download --platform` alone would miss e.g. Windows' pywinpty
and pick this machine's DyNet):

1. `uv pip compile --python-platform P --python-version V --only-binary :all:` resolves
   pyproject.toml's dependencies with the markers evaluated for the target;
2. `pip install --dry-run --no-deps --only-binary=:all: --platform TAGS --python-version V` then
   asks PyPI for a wheel of every pinned package that installs on the target (uv's resolution does
   not check the wheels' platform tags), reading only the wheels' metadata.

A cell resolves when both steps do; otherwise the table names the package that blocks it.

    python bench/platforms.py            # about a minute with PyPI reachable
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from common import ROOT, report, table



def manylinux(arch: str, glibc_minor: int = 28) -> list[str]:
    """A Linux with glibc 2.28 installs wheels for any older glibc too; pip expands macOS versions
    by itself but takes manylinux tags literally, so each is named (with the legacy aliases)."""
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    tags = [f"manylinux_2_{m}_{arch}" for m in range(glibc_minor, 4, -1)]
    return tags + [f"{legacy[m]}_{arch}" for m in legacy if m <= glibc_minor]


# (name, uv's target triple, pip's platform tags): macOS 13/14, glibc 2.28 (e.g. Debian 10, Ubuntu 20.04+)
PLATFORMS = [
    ("macOS arm64", "aarch64-apple-darwin", ["macosx_14_0_arm64"]),
    ("macOS x86-64", "x86_64-apple-darwin", ["macosx_13_0_x86_64"]),
    ("Windows x86-64", "x86_64-pc-windows-msvc", ["win_amd64"]),
    ("Linux x86-64", "x86_64-manylinux_2_28", manylinux("x86_64")),
    ("Linux aarch64", "aarch64-manylinux_2_28", manylinux("aarch64")),
]
PYTHONS = ["3.11", "3.12", "3.13"]


def uv() -> str:
    found = Path(sys.executable).parent / "uv"
    if not found.exists():
        sys.exit("bench/platforms.py needs uv (pip install uv, or make install, which installs the test extra)")
    return str(found)


def first_problem(text: str) -> str:
    """The package named in a resolver's or pip's refusal, else its first line."""
    for pattern in [r"No matching distribution found for (\S+)", r"Because (\S+?)(==\S+)? has no wheels",
                    r"Because there are no versions of (\S+)", r"(\S+)==\S+ has no usable wheels"]:
        if match := re.search(pattern, text):
            return match.group(1)
    return next((line.strip() for line in text.splitlines() if line.strip() and "WARNING" not in line), "?")


def resolve(requirements: list[str], triple: str, tags: list[str], python: str, work: Path) -> dict:
    source = work / "requirements.in"
    source.write_text("\n".join(requirements) + "\n")
    pinned = work / "pinned.txt"
    compiled = subprocess.run([uv(), "pip", "compile", str(source), "--python-platform", triple,
                               "--python-version", python, "--only-binary", ":all:", "--no-header",
                               "--no-annotate", "--quiet", "-o", str(pinned)], capture_output=True, text=True)
    if compiled.returncode != 0:
        return {"ok": False, "blocker": first_problem(compiled.stderr), "step": "resolve"}
    pins = [line for line in pinned.read_text().splitlines() if line.strip() and not line.startswith("#")]
    report_file = work / "report.json"
    checked = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
                              "--only-binary=:all:", *[f"--platform={tag}" for tag in tags], "--python-version", python,
                              "--implementation", "cp", "--target", str(work / "target"), "--quiet",
                              "--report", str(report_file), "-r", str(pinned)], capture_output=True, text=True)
    if checked.returncode != 0:
        return {"ok": False, "blocker": first_problem(checked.stderr), "step": "wheels"}
    wheels = {item["metadata"]["name"].lower(): item["download_info"]["url"].rsplit("/", 1)[1]
              for item in json.loads(report_file.read_text())["install"]}
    return {"ok": True, "packages": len(pins), "dynet": wheels.get("dynet38", "?")}


def main():
    requirements = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    rows, results = [], {}
    for name, triple, tags in PLATFORMS:
        for python in PYTHONS:
            with tempfile.TemporaryDirectory() as work:
                result = resolve(requirements, triple, tags, python, Path(work))
            results[f"{name} / {python}"] = result
            print(f"{name:15} Python {python}: {'resolved' if result['ok'] else 'BLOCKED by ' + result['blocker']}",
                  flush=True)
            rows.append([name, python, "yes" if result["ok"] else "**no**",
                         result.get("dynet", "-"), result.get("packages", "-"),
                         "-" if result["ok"] else f"{result['blocker']} ({result['step']})"])
    resolved = sum(r["ok"] for r in results.values())
    body = (f"The student's dependency set (`pyproject.toml`'s `dependencies`: DyNet chosen per platform by its "
            f"environment markers, NumPy, Matplotlib, tqdm, nbgrader, JupyterLab, ipykernel and everything they "
            f"pull in), resolved with wheels only for each platform and Python (`uv pip compile` with the target's "
            f"markers, then a wheel of every pinned package found on PyPI for the target's tags with "
            f"`pip install --dry-run --no-deps --platform`). **{resolved} of {len(results)} cells resolve.**\n\n"
            + table(["platform", "Python", "resolves", "DyNet wheel", "packages", "blocked by"], rows)
            + "\n\nResolved is not run: only Linux x86-64 with Python 3.11 is run here, with DyNet 2.1 and 2.2 "
              "(`tests/test_student_release.py` installs the release alone and executes every lecture and exercise). "
              "The platform tags asked for: " + ", ".join(f"{n} `{t[0]}`" for n, _, t in PLATFORMS)
            + " (and the older manylinux tags a glibc 2.28 Linux installs).")
    report("platforms", "The student's dependencies on macOS, Windows and Linux", body,
           "python bench/platforms.py")
    return 0 if resolved == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
