#!/usr/bin/env python3
"""Checks that every kernel of a compiled library (manifest.json and its
PTX) takes the tensor maps its manifest entry lists: one `<name>_tma`
parameter per `.param .align 64 .b8 ...[128]` of the PTX entry, in the same
number. A manifest that misses one makes the runtime pass too few kernel
arguments, and cuLaunchKernel reads past them (a segfault, not an error).

    check_manifest_ptx.py KERNELS_DIR
"""

import json
import re
import sys
from pathlib import Path

TENSOR_MAP_PARAM = re.compile(r"\.param\s+\.align\s+64\s+\.b8\s+\w+\[128\]")


def entry_signature(ptx: str, name: str) -> str:
    """The parameter list of `.entry name(...)`."""
    match = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\(([^)]*)\)", ptx)
    if not match:
        raise ValueError(f"no .entry {name}")
    return match.group(1)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    directory = Path(sys.argv[1])
    manifest = json.loads((directory / "manifest.json").read_text())
    problems = []
    for kernel in manifest["kernels"]:
        name = kernel["name"]
        listed = sum(p["name"].endswith("_tma") for p in kernel["params"])
        try:
            signature = entry_signature((directory / kernel["ptx"]).read_text(), name)
        except (OSError, ValueError) as error:
            problems.append(f"{name}: {error}")
            continue
        compiled = len(TENSOR_MAP_PARAM.findall(signature))
        if listed != compiled:
            problems.append(f"{name}: the manifest lists {listed} tensor maps, "
                            f"its PTX entry takes {compiled}")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(manifest['kernels'])} kernels, {len(problems)} mismatched")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
