"""Hatchling build hook: compiles share/pprof/scan.c into the library share/pprof/scan.py loads.

A hook rather than a setuptools Extension or Cython: the project builds with hatchling (its
force-include ships templates/ and static/ inside the package), and scan.c is plain C loaded
with ctypes, so building it is one compiler call that needs no Python headers (python3-dev),
no numpy headers and no extra build dependency. For `pip install -e .` the library is written
next to scan.c (the source tree is what gets imported); for a wheel it goes into the wheel,
which is then tagged for this platform.

Without a C compiler the build goes on without the library (with a warning): share.pprof then
decodes every profile on its pure-Python path (the same results, about 3x slower on large
profiles) and tests/test_pprof_scan.py fails, saying so. `make run` / `make test` install one.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "share/pprof/scan.c"
LIBRARY = "share/pprof/_scan" + (sysconfig.get_config_var("SHLIB_SUFFIX") or ".so")
FLAGS = ["-O2", "-std=c99", "-shared", "-fPIC"]


def compiler() -> list[str] | None:
    """$CC, else the compiler Python was built with, else cc: the first that is installed."""
    for name in (os.environ.get("CC"), sysconfig.get_config_var("CC"), "cc", "gcc", "clang"):
        command = shlex.split(name or "")
        if command and shutil.which(command[0]):
            return command
    return None


def build(source: Path, target: Path) -> bool:
    """Compile source into the shared library target; False (and a warning) if it cannot."""
    cc = compiler()
    if cc is None:
        print(f"warning: no C compiler: {SOURCE} not built (slower decoding)", file=sys.stderr)
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    done = subprocess.run([*cc, *FLAGS, "-o", str(partial), str(source)], capture_output=True)
    if done.returncode != 0:
        print(f"warning: {SOURCE} not built:\n{done.stderr.decode()}", file=sys.stderr)
        return False
    os.replace(partial, target)  # a process loading the old library keeps its copy
    return True


class ScanBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        if version == "editable":
            build(root / SOURCE, root / LIBRARY)
            return
        target = Path(tempfile.mkdtemp(prefix="pprof-share-scan-")) / Path(LIBRARY).name
        if build(root / SOURCE, target):
            build_data["force_include"][str(target)] = LIBRARY
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
