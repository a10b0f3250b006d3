#!/usr/bin/env python3
"""Writes .carry/exp/boxes-<edit> from .carry/exp/boxes (run3_ablation.sh):
the dK/dV kernels' PTX with the writers' turn spin, release fence and/or
tensor adds removed. Timing experiments only: every edit breaks dQ."""
import os
import shutil

VARIANTS = {
    "noturn": {"spin", "membar"},
    "nomembar": {"membar"},
    "noadds": {"adds"},
    "nowriter": {"spin", "membar", "adds"},
}


def edit(lines, edits):
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if "spin" in edits and "ld.acquire.gpu.global.b32" in line:
            # The spin: the acquire, its compare, and the branch back.
            assert "bra" in lines[i + 2]
            out += lines[i:i + 2]
            i += 3
            continue
        if "membar" in edits and line.strip() == "fence.acq_rel.gpu;":
            i += 1
            continue
        if "adds" in edits and ("cp.reduce.async.bulk.tensor" in line
                                or "cp.async.bulk.tensor.4d.global.shared" in line):
            i += 1
            continue
        out.append(line)
        i += 1
    return out


for name, edits in VARIANTS.items():
    target = f".carry/exp/boxes-{name}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(".carry/exp/boxes", target)
    for file in os.listdir(target):
        if file.endswith("_dkdv.ptx"):
            path = os.path.join(target, file)
            with open(path) as f:
                lines = f.read().split("\n")
            with open(path, "w") as f:
                f.write("\n".join(edit(lines, edits)))
