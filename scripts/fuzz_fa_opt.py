#!/usr/bin/env python3
"""Mutation fuzzer for fa-opt: no input or option may crash or hang the compiler.

Seeds are examples/*.mlir and every test/**/*.mlir (split at `// -----`). A case
mutates a seed's IR text (shape dimensions, element types, memory spaces,
attribute keys and values, `causal`, numbers, lines, splices from other seeds,
truncation) and runs it under a command line built from what `fa-opt --help`
lists: the seed's own RUN pipeline, one fa pass, a stretch of the fa-to-ptx
pipeline or a random chain, each pass with random options (0, negative, huge,
empty, garbage).

A run fails when fa-opt dies by a signal, prints a crash marker ("LLVM ERROR",
"PLEASE submit a bug report", "Stack dump", a failed assertion, "UNREACHABLE"),
exits with a status other than 0 or 1, exits 1 without a word on stderr, or runs
past the time limit. A located diagnostic with exit status 1 is the right answer
to a bad input.

Case i of seed S is always the same case (its generator is seeded with "S:i"),
so `--seed S --runs N` is reproducible whatever --jobs is. Failures are grouped
into families by a signature (the fatal message, the signal and the top frames
of the stack dump); each family keeps its smallest reproducer under --out
(input.mlir, cmd.txt, stderr.txt), which --minimize shrinks line by line.

  python3 scripts/fuzz_fa_opt.py --seed 1 --runs 300
  python3 scripts/fuzz_fa_opt.py --time 1800 --jobs 2 --out /tmp/fuzz --minimize
  python3 scripts/fuzz_fa_opt.py --reduce /tmp/fuzz/01-segv-...   # shrink a saved one

Standard library only (runs on the CI's python3.11).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
TOOL_MARK = "fuzz_fa_opt"  # in every info.json this script writes (stale ones are cleared)
INPUT_NAME = "input.mlir"

# --------------------------------------------------------------------------
# Discovering passes and their options from `fa-opt --help`.
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PassOption:
    name: str
    kind: str  # the value type --help prints: long, int, uint, boolean, string, ...


@dataclasses.dataclass(frozen=True)
class PassInfo:
    name: str
    options: tuple[PassOption, ...]


# "      --fa-tile-attention   -   Tile ..." or "        --block-m=<long>   - ..."
HELP_ENTRY = re.compile(r"^(?P<indent> +)--(?P<name>[\w.-]+)(?:=<(?P<kind>[^>]*)>)?(?:\s|$)")


def is_project_pass(name: str) -> bool:
    return name.startswith("fa-") or name.startswith("convert-fa-")


def parse_help(help_text: str) -> list[PassInfo]:
    """The fa passes and pipelines --help lists, each with the options indented under it."""
    passes: list[PassInfo] = []
    in_pass_section = False
    current: Optional[tuple[str, int, list[PassOption]]] = None

    def close_current() -> None:
        if current and is_project_pass(current[0]):
            passes.append(PassInfo(current[0], tuple(current[2])))

    for line in help_text.splitlines():
        stripped = line.strip()
        if stripped in ("Passes:", "Pass Pipelines:"):
            in_pass_section = True
            continue
        match = HELP_ENTRY.match(line)
        if not match:
            continue
        indent = len(match.group("indent"))
        if current and indent > current[1]:
            current[2].append(PassOption(match.group("name"), match.group("kind") or "boolean"))
            continue
        close_current()
        current = None
        if not in_pass_section:
            continue
        if indent <= 4:  # a top-level option after the pass list ends it
            in_pass_section = False
            continue
        current = (match.group("name"), indent, [])
    close_current()
    return passes


def discover_passes(fa_opt: str) -> list[PassInfo]:
    result = subprocess.run([fa_opt, "--help"], capture_output=True, text=True, timeout=60)
    passes = parse_help(result.stdout)
    if not passes:
        raise SystemExit(f"fuzz_fa_opt: found no fa passes in `{fa_opt} --help`")
    return passes


def discover_pipeline_order(fa_opt: str, passes: list[PassInfo]) -> list[str]:
    """The fa passes in the order --fa-to-ptx runs them (from --dump-pass-pipeline)."""
    known = {p.name for p in passes}
    result = subprocess.run([fa_opt, "--fa-to-ptx", "--dump-pass-pipeline", "-o", os.devnull],
                            input="", capture_output=True, text=True, timeout=60)
    order: list[str] = []
    for name in re.findall(r"(?<![\w-])((?:convert-)?fa-[\w-]+)", result.stdout + result.stderr):
        if name in known and name not in order:
            order.append(name)
    return order


# --------------------------------------------------------------------------
# Seeds: examples and lit inputs, split into cases, with their RUN pipelines.
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Seed:
    name: str
    text: str
    run_args: tuple[tuple[str, ...], ...]  # the fa-opt arguments of the file's RUN lines


# Arguments of a RUN line that concern lit, not the compiler under test.
LIT_ONLY_ARGS = {"-split-input-file", "--split-input-file", "-verify-diagnostics",
                 "--verify-diagnostics", "%s", "2>&1", "-", "--mlir-print-op-generic"}


def run_line_arguments(text: str) -> tuple[tuple[str, ...], ...]:
    """The fa-opt arguments of each RUN line (lit substitutions replaced by plain values)."""
    joined = re.sub(r"\\\n//\s*RUN:", " ", text)
    pipelines: list[tuple[str, ...]] = []
    for line in re.findall(r"^//\s*RUN:(.*)$", joined, re.M):
        for command in line.split("|"):
            try:
                words = shlex.split(command.replace("%t", "out"))
            except ValueError:
                continue
            if "fa-opt" not in words:
                continue
            args = words[words.index("fa-opt") + 1:]
            if "-o" in args:
                del args[args.index("-o"):args.index("-o") + 2]
            kept = tuple(a for a in args if a not in LIT_ONLY_ARGS and a.startswith("-"))
            if kept and kept not in pipelines:
                pipelines.append(kept)
    return tuple(pipelines)


def load_seeds(root: Path) -> list[Seed]:
    files = sorted((root / "examples").glob("*.mlir")) + sorted((root / "test").rglob("*.mlir"))
    seeds: list[Seed] = []
    for path in files:
        text = path.read_text()
        run_args = run_line_arguments(text)
        for index, chunk in enumerate(re.split(r"^// -----\s*$", text, flags=re.M)):
            if "func" in chunk or "module" in chunk:
                seeds.append(Seed(f"{path.relative_to(root)}#{index}", chunk, run_args))
    if not seeds:
        raise SystemExit(f"fuzz_fa_opt: no seed .mlir files under {root}/examples or {root}/test")
    return seeds


def harvest_attribute_keys(seeds: list[Seed]) -> list[str]:
    """Keys of the attribute dictionaries the seeds use (fa.tile entries and the like)."""
    keys = set()
    for seed in seeds:
        keys.update(re.findall(r"(?<![%\w.#@^$])([a-z_][\w.]*) = (?=[-\d\"\[{tf])", seed.text))
    return sorted(keys)


# A named fa attribute holding a dictionary or a typed configuration (`fa.tile = #fa.tile<...>`).
NAMED_FA_ATTRIBUTE = re.compile(r"\b(fa\.[\w.]+) = (?:\{([^{}]*)\}|#fa\.\w+<([^<>]*)>)")
# The attributes whose value is a typed configuration of the same name.
TYPED_CONFIGS = ("fa.tile", "fa.rows")


def harvest_dictionary_keys(seeds: list[Seed]) -> dict[str, list[str]]:
    """The entries each named fa attribute takes in the seeds: fa.tile -> block_m, wgmma ..."""
    keys: dict[str, set[str]] = {}
    for seed in seeds:
        for name, dictionary, typed in NAMED_FA_ATTRIBUTE.findall(seed.text):
            keys.setdefault(name, set()).update(re.findall(r"([a-z_]\w*) = ", dictionary or typed))
    return {name: sorted(entries) for name, entries in sorted(keys.items()) if entries}


def harvest_flag_keys(seeds: list[Seed]) -> set[str]:
    """Entries the seeds' typed configurations give `true` or `false` (q_in_shared, wgmma ...)."""
    flags: set[str] = set()
    for seed in seeds:
        for body in re.findall(r"#fa\.(?:tile|rows)<([^<>]*)>", seed.text):
            flags.update(re.findall(r"([a-z_]\w*) = (?:true|false)\b", body))
    return flags


# --------------------------------------------------------------------------
# Interesting values.
# --------------------------------------------------------------------------

INTERESTING_INTS = [
    "0", "1", "-1", "2", "3", "5", "7", "13", "15", "17", "31", "33", "48", "63", "65", "96",
    "100", "127", "129", "192", "255", "256", "257", "512", "1000", "1024", "2048", "4096",
    "8192", "65536", "1048576", str(2**31 - 1), str(2**31), str(2**32), str(2**32 + 1),
    str(2**63 - 1), str(2**63), str(-2**63), str(2**64),
]
PLAUSIBLE_INTS = ["0", "1", "1", "2", "4", "8", "16", "32", "64", "128", "256"]
INTERESTING_FLOATS = ["0.0", "-0.0", "-1.0", "1.0e-45", "3.4e38", "1.0e300", "1.0e-300",
                      "0x7FC00000", "0x7F800000", "0xFF800000", "1.0"]
ELEMENT_TYPES = ["bf16", "f16", "f32", "f64", "i8", "i32", "i1", "i64", "index", "f8E4M3FN"]
MEMORY_SPACES = ["1", "3", "4", "5", "#gpu.address_space<workgroup>",
                 "#gpu.address_space<private>", "#gpu.address_space<global>",
                 "strided<[?, ?, ?, 1], offset: ?>", "affine_map<(d0, d1) -> (d1, d0)>"]
WRONG_TYPED_VALUES = ["\"64\"", "64.0", "true", "false", "[64]", "unit", "{}", "64 : i1",
                      "-1 : i8", "99999999999999999999999", "64 : i32", "@sym", "dense<1> : vector<2xi64>",
                      "\"\"", "array<i64: 64>"]
CHIPS = ["", "sm_50", "sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a",
         "sm_100", "sm_100a", "sm_101a", "sm_103a", "sm_120", "sm_120a", "sm_121a", "sm_", "sm_9999",
         "SM_90A", "sm_90a ", "bogus", "gfx90a"]
# Relative paths land in the run's scratch directory; the absolute ones cannot be created.
PATHS = ["", "out", "a/b/c", ".", "/dev/null", "/dev/null/x", INPUT_NAME, "/proc/fuzz-fa-opt/x"]
GARBAGE_STRINGS = ["", "abc", "'a b'", "{", "}", "\"", "=", "-1", "0x40", "1e3", "64abc", "+64",
                   "\\", "%s", "sm_90a,sm_80"]
BOOLS = ["true", "false", "1", "0", "2", "-1", "yes", ""]


def pick_int(rng: random.Random) -> str:
    """Mostly values a user might write, so cases get past the verifiers; else edge cases."""
    return rng.choice(PLAUSIBLE_INTS) if rng.random() < 0.5 else rng.choice(INTERESTING_INTS)


# --------------------------------------------------------------------------
# IR mutators: each takes the text and returns a mutated copy, or None where
# it does not apply (no shape, no attribute ...).
# --------------------------------------------------------------------------

Mutator = Callable[[str, random.Random, "Corpus"], Optional[str]]

SHAPED_TYPE = re.compile(r"\b(memref|vector|tensor)<([^<>]*)>")
DIMS_AND_ELEMENT = re.compile(r"^((?:(?:\d+|\?)x)*)([\w.]+)(.*)$", re.S)
INTEGER = re.compile(r"(?<![\w%@#$.\-])-?\d+(?![\w.])")
FLOAT = re.compile(r"(?<![\w%@#$.])-?\d+\.\d*(?:[eE][-+]?\d+)?")
ATTRIBUTE_KEY = re.compile(r"(?<![%\w.#@^$\"])([a-z_][\w.]*) = ")
SSA_NAME = re.compile(r"%[\w.$-]+")


@dataclasses.dataclass(frozen=True)
class Corpus:
    seeds: list[Seed]
    attribute_keys: list[str]
    dictionary_keys: dict[str, list[str]]
    flag_keys: set[str]

    @staticmethod
    def of(seeds: list[Seed]) -> "Corpus":
        return Corpus(seeds, harvest_attribute_keys(seeds), harvest_dictionary_keys(seeds),
                      harvest_flag_keys(seeds))

    def pick_seed(self, rng: random.Random) -> Seed:
        """A file first, then one of its cases: invalid.mlir's many small cases (which stop at
        the verifier) would otherwise crowd out the inputs that reach the passes."""
        files = sorted({s.name.rsplit("#", 1)[0] for s in self.seeds})
        file = rng.choice(files)
        return rng.choice([s for s in self.seeds if s.name.rsplit("#", 1)[0] == file])


def replace_span(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def random_match(pattern: re.Pattern, text: str, rng: random.Random) -> Optional[re.Match]:
    matches = list(pattern.finditer(text))
    return rng.choice(matches) if matches else None


def mutate_shaped_type(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    """One change to a memref/vector type, at one use or at every use of that type."""
    match = random_match(SHAPED_TYPE, text, rng)
    if not match:
        return None
    parts = DIMS_AND_ELEMENT.match(match.group(2))
    if not parts:
        return None
    dims = [d for d in parts.group(1).split("x") if d]
    element, rest = parts.group(2), parts.group(3)
    choice = rng.randrange(6)
    if choice == 0 and dims:  # a dimension to an edge value
        dims[rng.randrange(len(dims))] = pick_int(rng)
    elif choice == 1 and dims:  # dynamic <-> static
        i = rng.randrange(len(dims))
        dims[i] = pick_int(rng) if dims[i] == "?" else "?"
    elif choice == 2:  # one dimension more or fewer
        if dims and rng.random() < 0.5:
            del dims[rng.randrange(len(dims))]
        else:
            dims.insert(rng.randrange(len(dims) + 1), rng.choice(["?", pick_int(rng)]))
    elif choice == 3:
        element = rng.choice(ELEMENT_TYPES)
    elif choice == 4 and match.group(1) == "memref":
        rest = ", " + rng.choice(MEMORY_SPACES)
    else:
        rest = ""
    new_type = f"{match.group(1)}<{''.join(d + 'x' for d in dims)}{element}{rest}>"
    if rng.random() < 0.75:  # every use, so the function still type-checks
        return text.replace(match.group(0), new_type)
    return replace_span(text, match.start(), match.end(), new_type)


def swap_element_type(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    present = [t for t in ELEMENT_TYPES if re.search(rf"x{re.escape(t)}\b", text)]
    if not present:
        return None
    old, new = rng.choice(present), rng.choice(ELEMENT_TYPES)
    pattern = re.compile(rf"(?<=x){re.escape(old)}\b")
    if rng.random() < 0.6:
        return pattern.sub(new, text)
    match = random_match(pattern, text, rng)
    return replace_span(text, match.start(), match.end(), new)


def mutate_integer(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    match = random_match(INTEGER, text, rng)
    return match and replace_span(text, match.start(), match.end(), rng.choice(INTERESTING_INTS))


def mutate_float(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    match = random_match(FLOAT, text, rng)
    return match and replace_span(text, match.start(), match.end(), rng.choice(INTERESTING_FLOATS))


def attribute_value_end(text: str, start: int) -> int:
    """Where the attribute value starting at `start` ends (a `,` or closing bracket at depth 0)."""
    depth, i, in_string = 0, start, False
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[(<":
            depth += 1
        elif c in "}])>":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        elif c == "\n" and depth == 0:
            return i
        i += 1
    return i


def misspell(key: str, rng: random.Random) -> str:
    choice = rng.randrange(5)
    if choice == 0 and len(key) > 1:
        i = rng.randrange(len(key) - 1)
        return key[:i] + key[i + 1] + key[i] + key[i + 2:]
    if choice == 1 and len(key) > 1:
        i = rng.randrange(len(key))
        return key[:i] + key[i + 1:]
    if choice == 2:
        return key.replace("_", "-") if "_" in key else key.upper()
    if choice == 3:
        return key + "s"
    return key.capitalize()


def mutate_attribute(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    """Misspell, remove, duplicate or retype one `key = value` entry."""
    match = random_match(ATTRIBUTE_KEY, text, rng)
    if not match:
        return None
    key = match.group(1)
    value_end = attribute_value_end(text, match.end())
    value = text[match.end():value_end]
    entry_end = value_end + 2 if text[value_end:value_end + 2] == ", " else value_end
    choice = rng.randrange(4)
    if choice == 0:
        return replace_span(text, match.start(), match.start() + len(key), misspell(key, rng))
    if choice == 1:
        return replace_span(text, match.start(), entry_end, "")
    if choice == 2:
        return replace_span(text, match.start(), match.start(), f"{key} = {value}, ")
    return replace_span(text, match.end(), value_end, rng.choice(WRONG_TYPED_VALUES))


def random_entries(rng: random.Random, corpus: Corpus, dictionary: Optional[str]) -> str:
    """1-4 entries, mostly keys that this attribute takes in the seeds, mostly values of the
    key's kind (`true`/`false` for a flag, else an integer); now and then a key misspelt, which
    must be a clean parse error."""
    known = corpus.dictionary_keys.get(dictionary or "")
    pool = known if known and rng.random() < 0.9 else corpus.attribute_keys
    keys = rng.sample(pool, min(len(pool), rng.randint(1, 4)))

    def value(key: str) -> str:
        if rng.random() >= 0.85:
            return rng.choice(WRONG_TYPED_VALUES)
        if key in corpus.flag_keys:
            return rng.choice(["true", "false"])
        return pick_int(rng)

    return ", ".join(f"{misspell(k, rng) if rng.random() < 0.1 else k} = {value(k)}" for k in keys)


def add_attribute(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    """A new entry in an existing dictionary or typed configuration, or an `fa.tile` (or other)
    attribute on a function."""
    openings = list(re.finditer(r"(?:([\w.]+) = |attributes )\{|([\w.]+) = #fa\.\w+<", text))
    if openings and rng.random() < 0.5:
        opening = rng.choice(openings)
        name = opening.group(1) or opening.group(2)
        return replace_span(text, opening.end(), opening.end(),
                            random_entries(rng, corpus, name) + ", ")
    bodies = [m for m in re.finditer(r"^(func\.func @[^\n]*?)(\)\s*)\{\s*$", text, re.M)
              if "attributes" not in m.group(0)]
    signature_ends = [m.start(2) + 1 for m in bodies]
    signature_ends += [m.start() + 1 for m in re.finditer(r"\) \{\n", text)]
    if not signature_ends:
        return None
    at = rng.choice(signature_ends)
    names = sorted(corpus.dictionary_keys) or ["fa.tile"]
    name = "fa.tile" if "fa.tile" in names and rng.random() < 0.6 else rng.choice(names)
    entries = random_entries(rng, corpus, name)
    value = f"#{name}<{entries}>" if name in TYPED_CONFIGS else f"{{{entries}}}"
    return replace_span(text, at, at, f" attributes {{{name} = {value}}}")


FA_OP_OPERANDS = re.compile(r"(fa\.(?:attention|attention_grad|layernorm|layernorm_grad)\b[^@]*?"
                            r"outs\([^()]*\)(?:\s*(?:lse|stats)\([^()]*\))?)(\s*causal)?")


def toggle_causal(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    """Add or remove `causal`, or add a `scale(...)`, on one fa op."""
    match = random_match(FA_OP_OPERANDS, text, rng)
    if not match:
        return None
    if rng.random() < 0.25:
        at = match.end()
        return replace_span(text, at, at, f" scale({rng.choice(INTERESTING_FLOATS)})")
    if match.group(2):
        return replace_span(text, match.start(2), match.end(2), "")
    return replace_span(text, match.end(1), match.end(1), " causal")


def swap_ssa_names(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    """Two operands of one line change places (key for value, output for input ...)."""
    lines = text.splitlines(keepends=True)
    candidates = [i for i, line in enumerate(lines) if len(set(SSA_NAME.findall(line))) >= 2]
    if not candidates:
        return None
    i = rng.choice(candidates)
    a, b = rng.sample(sorted(set(SSA_NAME.findall(lines[i]))), 2)
    lines[i] = SSA_NAME.sub(lambda m: b if m.group(0) == a else a if m.group(0) == b else m.group(0),
                            lines[i])
    return "".join(lines)


def mutate_lines(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    """Delete, duplicate or swap lines."""
    lines = text.splitlines(keepends=True)
    if len(lines) < 2:
        return None
    i = rng.randrange(len(lines))
    choice = rng.randrange(4)
    if choice == 0:
        del lines[i]
    elif choice == 1:
        lines.insert(i, lines[i])
    elif choice == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    else:
        del lines[i:i + rng.randint(2, 8)]
    return "".join(lines)


def splice_seed(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    """Lines of another seed inserted here, or a whole other seed appended."""
    donor = rng.choice(corpus.seeds).text
    if rng.random() < 0.3:
        return text + "\n" + donor
    donor_lines = donor.splitlines(keepends=True)
    start = rng.randrange(len(donor_lines))
    block = donor_lines[start:start + rng.randint(1, 6)]
    lines = text.splitlines(keepends=True)
    at = rng.randrange(len(lines) + 1)
    return "".join(lines[:at] + block + lines[at:])


def truncate(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    if len(text) < 2:
        return None
    at = rng.randrange(len(text))
    if rng.random() < 0.5:
        at = text.rfind("\n", 0, at) + 1
    return text[:at]


def mutate_character(text: str, rng: random.Random, corpus: Corpus) -> Optional[str]:
    if not text:
        return None
    at = rng.randrange(len(text))
    if rng.random() < 0.5:
        return replace_span(text, at, at + 1, "")
    return replace_span(text, at, at, rng.choice("{}()<>[],:=%@x?0-9\"#"))


MUTATORS: list[tuple[Mutator, int]] = [
    (mutate_shaped_type, 14), (swap_element_type, 8), (mutate_integer, 10), (mutate_float, 3),
    (mutate_attribute, 10), (add_attribute, 10), (toggle_causal, 6), (swap_ssa_names, 4),
    (mutate_lines, 6), (splice_seed, 5), (truncate, 2), (mutate_character, 2),
]


def mutate_ir(text: str, rng: random.Random, corpus: Corpus) -> tuple[str, list[str]]:
    count = rng.choices([0, 1, 2, 3, 4], weights=[10, 40, 25, 15, 10])[0]
    applied: list[str] = []
    attempts = 0
    while len(applied) < count and attempts < 20:
        attempts += 1
        mutator = rng.choices([m for m, _ in MUTATORS], weights=[w for _, w in MUTATORS])[0]
        mutated = mutator(text, rng, corpus)
        if mutated is not None and mutated != text:
            text = mutated
            applied.append(mutator.__name__)
    return text, applied


# --------------------------------------------------------------------------
# Command lines.
# --------------------------------------------------------------------------


def option_value(option: PassOption, rng: random.Random) -> str:
    kind, name = option.kind.lower(), option.name
    if kind in ("boolean", "bool"):
        return rng.choice(BOOLS)
    if "string" in kind:
        if name == "chip":
            return rng.choice(CHIPS)
        if "dir" in name or "path" in name:
            return rng.choice(PATHS)
        return rng.choice(GARBAGE_STRINGS)
    if rng.random() < 0.1:
        return rng.choice(GARBAGE_STRINGS)
    return pick_int(rng)


def random_options(info: PassInfo, rng: random.Random) -> list[str]:
    if not info.options or rng.random() < 0.3:
        return []
    chosen = [rng.choice(info.options) for _ in range(rng.randint(1, 3))]
    options = [f"{o.name}={option_value(o, rng)}" for o in chosen]
    if rng.random() < 0.05:
        options.append(f"{misspell(chosen[0].name, rng)}=1")
    return options


def pass_argument(info: PassInfo, options: list[str]) -> str:
    return f"--{info.name}" + (f"={' '.join(options)}" if options else "")


def mutate_run_args(args: tuple[str, ...], by_name: dict[str, PassInfo],
                    rng: random.Random) -> list[str]:
    """The seed's own RUN arguments, with a pass's options replaced now and then."""
    result = []
    for arg in args:
        name = arg.lstrip("-").split("=", 1)[0]
        if name in by_name and rng.random() < 0.4:
            arg = pass_argument(by_name[name], random_options(by_name[name], rng))
        result.append(arg)
    return result


def random_command(seed: Seed, rng: random.Random, passes: list[PassInfo],
                   order: list[str]) -> list[str]:
    by_name = {p.name: p for p in passes}
    strategy = rng.choices(["run-line", "single", "stretch", "chain", "pipeline"],
                           weights=[30, 25, 20, 15, 10])[0]
    if strategy == "run-line" and seed.run_args:
        return mutate_run_args(rng.choice(seed.run_args), by_name, rng)
    if strategy == "stretch" and order:
        start = rng.randrange(len(order))
        chain = [by_name[n] for n in order[start:start + rng.randint(1, len(order) - start)]]
    elif strategy == "chain":
        chain = [rng.choice(passes) for _ in range(rng.randint(2, 4))]
    elif strategy == "pipeline" and "fa-to-ptx" in by_name:
        chain = [by_name["fa-to-ptx"]]
    else:
        chain = [rng.choice(passes)]
    if rng.random() < 0.1 and "fa-to-ptx" not in [p.name for p in chain]:
        textual = ",".join(p.name + (f"{{{' '.join(o)}}}" if (o := random_options(p, rng)) else "")
                           for p in chain)
        return [f"--pass-pipeline=builtin.module({textual})"]
    return [pass_argument(p, random_options(p, rng)) for p in chain]


@dataclasses.dataclass(frozen=True)
class Case:
    index: int
    text: str
    args: tuple[str, ...]
    origin: str  # the seed and the mutations applied, for the report


def with_export_dir(args: list[str]) -> list[str]:
    """--fa-to-ptx writes its PTX files (for --ptxas to assemble) where it would not."""
    result = []
    for arg in args:
        if arg.startswith("--fa-to-ptx") and "export-dir=" not in arg:
            arg += " export-dir=ptx" if "=" in arg else "=export-dir=ptx"
        result.append(arg)
    return result


def make_case(fuzz_seed: int, index: int, corpus: Corpus, passes: list[PassInfo],
              order: list[str], export_ptx: bool = False) -> Case:
    rng = random.Random(f"{fuzz_seed}:{index}")
    seed = corpus.pick_seed(rng)
    text, applied = mutate_ir(seed.text, rng, corpus)
    args = random_command(seed, rng, passes, order)
    if export_ptx:
        args = with_export_dir(args)
    return Case(index, text, tuple(args), f"{seed.name} + [{', '.join(applied)}]")


# --------------------------------------------------------------------------
# Running fa-opt and judging the result.
# --------------------------------------------------------------------------

CRASH_PATTERNS = [
    re.compile(r"^LLVM ERROR:", re.M),
    re.compile(r"PLEASE submit a bug report"),
    re.compile(r"^Stack dump:", re.M),
    re.compile(r"Assertion .* failed"),
    re.compile(r"UNREACHABLE executed"),
    re.compile(r"terminate called after throwing"),
]


@dataclasses.dataclass(frozen=True)
class Outcome:
    returncode: Optional[int]  # None when it was killed for running past the limit
    stderr: str
    seconds: float
    ptxas_error: Optional[str] = None  # with --ptxas: the command and why it refused the PTX

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def silent_failure(self) -> bool:
        """Exit status 1 and not a word on stderr: the user cannot tell what went wrong."""
        return self.returncode == 1 and not self.stderr.strip()

    @property
    def failed(self) -> bool:
        if self.timed_out or self.returncode not in (0, 1) or self.ptxas_error:
            return True
        return self.silent_failure or any(p.search(self.stderr) for p in CRASH_PATTERNS)


class Runner:
    """Runs fa-opt on one input in a scratch directory, in its own process group."""

    def __init__(self, fa_opt: str, timeout: float, scratch: Path, ptxas: Optional[str] = None):
        self.fa_opt = fa_opt
        self.timeout = timeout
        self.scratch = scratch
        self.ptxas = ptxas
        self.env = dict(os.environ)
        symbolizer = shutil.which("llvm-symbolizer")
        if symbolizer and "LLVM_SYMBOLIZER_PATH" not in self.env:
            self.env["LLVM_SYMBOLIZER_PATH"] = symbolizer

    def run(self, text: str, args: tuple[str, ...]) -> Outcome:
        workdir = Path(tempfile.mkdtemp(dir=self.scratch))
        try:
            (workdir / INPUT_NAME).write_text(text)
            return self._run_in(workdir, args)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _run_in(self, workdir: Path, args: tuple[str, ...]) -> Outcome:
        start = time.monotonic()
        returncode, stderr = self._run_process([self.fa_opt, INPUT_NAME, *args, "-o", os.devnull],
                                               workdir)
        ptxas_error = self._ptxas_error(workdir) if self.ptxas and returncode == 0 else None
        return Outcome(returncode, stderr, time.monotonic() - start, ptxas_error)

    def _run_process(self, command: list[str], workdir: Path) -> tuple[Optional[int], str]:
        """(exit status or None after the time limit, stderr); kills the whole process group."""
        process = subprocess.Popen(command, cwd=workdir, env=self.env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True)
        try:
            _, stderr = process.communicate(timeout=self.timeout)
            returncode: Optional[int] = process.returncode
        except subprocess.TimeoutExpired:
            returncode = None
            stderr = self._stack_dump_then_kill(process)
        kill_group(process.pid)  # anything it left behind
        return returncode, stderr.decode(errors="replace")

    def _ptxas_error(self, workdir: Path) -> Optional[str]:
        """Assembles each PTX file the run exported for its own .target; the first refusal."""
        for ptx in sorted(workdir.rglob("*.ptx")):
            target = re.search(r"^\.target\s+(sm_\w+)", ptx.read_text(errors="replace"), re.M)
            if not target:
                continue
            relative = str(ptx.relative_to(workdir))
            command = [self.ptxas, f"-arch={target.group(1)}", relative, "-o", os.devnull]
            returncode, stderr = self._run_process(command, workdir)
            if returncode != 0:
                status = "timed out" if returncode is None else f"exit status {returncode}"
                return f"{shlex.join(['ptxas', *command[1:]])}: {status}\n{stderr.strip()}"
        return None


    @staticmethod
    def _stack_dump_then_kill(process: subprocess.Popen) -> bytes:
        """SIGABRT makes LLVM's handler print where the run was stuck; then the group dies."""
        try:
            process.send_signal(signal.SIGABRT)
            _, stderr = process.communicate(timeout=STACK_DUMP_SECONDS)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            _, stderr = process.communicate()
        return stderr


STACK_DUMP_SECONDS = 10


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------
# Signatures: what makes two failures the same bug.
# --------------------------------------------------------------------------

# Frames of the crash machinery itself, not of the bug.
NOISE_FRAME = re.compile(
    r"PrintStackTrace|RunSignalHandlers|SignalHandler|CrashRecoveryContext|__restore_rt|"
    r"\braise\b|\babort\b|__assert_fail|__pthread_kill|report_fatal_error|reportFatal|"
    r"llvm_unreachable_internal|libc\.so|__cxa_throw|__gnu_cxx|std::terminate|"
    r"__cxxabiv1|_Unwind|handleErrorImpl|OOMError|report_bad_alloc_error")
# fa-opt's own frames: in the binary (a release build's frames name it), in the fa
# namespace, or in one of the project's source files (the symboliser names the file).
PROJECT_SOURCES = {p.name for d in ("lib", "tools") for p in (REPO_ROOT / d).rglob("*.cpp")}
PROJECT_FRAME = re.compile(r"fa-opt\+0x|\bmlir::fa::|(?:^|[\s/])(" +
                           "|".join(re.escape(n) for n in sorted(PROJECT_SOURCES)) + r"):\d+")
STACK_FRAME = re.compile(r"^\s*#\d+\s+0x[0-9a-fA-F]+\s+(.*)$", re.M)


def frame_name(frame: str) -> str:
    """`ns::f(int) /path/x.cpp:3:4` -> `ns::f`, `void ns::g<T>(...)` -> `ns::g<T>`; an
    unsymbolised frame keeps binary+offset."""
    frame = frame.replace("(anonymous namespace)::", "").strip()
    unsymbolised = re.fullmatch(r"\(([^()]*\+0x[0-9a-fA-F]+)\)", frame)
    if unsymbolised:
        return os.path.basename(unsymbolised.group(1))
    while True:
        end = name_end(frame)
        rest = frame[end + 1:]
        if frame[end:end + 1] == " " and re.match(r"[A-Za-z_~]", rest) and "(" in rest:
            frame = rest  # that was a return type (templates print one)
            continue
        return frame[:end]


def name_end(frame: str) -> int:
    """Where the name ends: the first `(` or space outside template brackets."""
    depth = 0
    for i, c in enumerate(frame):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c in "( " and depth <= 0 and i > 0:
            return i
    return len(frame)


def top_frames(stderr: str, count: int = 3) -> list[str]:
    names = [frame_name(f) for f in STACK_FRAME.findall(stderr) if not NOISE_FRAME.search(f)]
    symbolised = [n for n in names if n and "+0x" not in n]
    return (symbolised or names)[:count]


def normalise_message(message: str) -> str:
    # Which node instruction selection choked on varies with the input, not the bug.
    message = re.sub(r"^(Cannot select:).*", r"\1 ...", message)
    message = re.sub(r"0x[0-9a-fA-F]+", "HEX", message)
    message = re.sub(r"\d+", "N", message)
    return message.strip()[:120]


def innermost_project_frame(stderr: str) -> Optional[str]:
    """The deepest frame of fa-opt's own code (not MLIR's or LLVM's): the pass or pattern."""
    for frame in STACK_FRAME.findall(stderr):
        if PROJECT_FRAME.search(frame) and not NOISE_FRAME.search(frame):
            name = frame_name(frame)
            if name not in ("main", "_start") and "+0x" not in name:
                return name
    return None


def pass_names(args: tuple[str, ...]) -> str:
    names: list[str] = []
    for arg in args:
        found = (re.findall(r"(?:convert-)?fa-[\w-]+", arg) if arg.startswith("--pass-pipeline")
                 else [arg.lstrip("-").split("=", 1)[0]])
        names += [n for n in found if n not in names]
    return " ".join(names) or "parse"


def signature_of(outcome: Outcome, args: tuple[str, ...]) -> str:
    """Fatal message or signal, top frames, and the innermost project frame: where a hang or
    an exhausted memory limit was, the project frame alone (the top frames vary)."""
    stderr = outcome.stderr
    project_frame = innermost_project_frame(stderr)
    where = project_frame or pass_names(args)
    if outcome.timed_out:
        return f"timeout in {where}"
    if outcome.silent_failure:
        return f"exit status 1 without a message in {pass_names(args)}"
    if outcome.ptxas_error:
        refusal = outcome.ptxas_error.splitlines()[1:] or ["no message"]
        return "ptxas refuses the PTX: " + normalise_message(re.sub(r"'[^']*'", "_", refusal[0]))
    if re.search(r"out of memory|std::bad_alloc|Allocation failed", stderr):
        return f"out of memory in {where}"
    parts = []
    fatal = re.search(r"^LLVM ERROR: (.*)$", stderr, re.M)
    assertion = re.search(r"Assertion `(.*)' failed", stderr)
    unreachable = re.search(r"UNREACHABLE executed(?: at [^:]*:\d+)?!?\s*(.*)", stderr)
    if fatal:
        parts.append("LLVM ERROR: " + normalise_message(fatal.group(1)))
    elif assertion:
        parts.append("assertion " + normalise_message(assertion.group(1)))
    elif unreachable:
        parts.append("unreachable " + normalise_message(unreachable.group(1)))
    if outcome.returncode is not None and outcome.returncode < 0:
        try:
            parts.append(signal.Signals(-outcome.returncode).name)
        except ValueError:
            parts.append(f"signal {-outcome.returncode}")
    elif outcome.returncode not in (0, 1) and not parts:
        parts.append(f"exit status {outcome.returncode}")
    frames = top_frames(stderr)
    if frames:
        parts.append("at " + " <- ".join(frames))
    if project_frame and project_frame not in frames:
        parts.append(f"in {project_frame}")
    elif not frames and not (fatal or assertion or unreachable):
        parts.append(f"in {pass_names(args)}")  # a bare signal (no stack dump): name the passes
    return " ".join(parts) or "crash marker: " + normalise_message(stderr.strip()[-200:])


def slug(signature: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", signature).strip("-")[:70].lower()


# --------------------------------------------------------------------------
# Families of failures and their reproducers.
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Family:
    signature: str
    directory: Path
    case: Case
    outcome: Outcome
    count: int = 0


def command_line(fa_opt_display: str, args: tuple[str, ...], input_path: str = INPUT_NAME) -> str:
    return shlex.join([fa_opt_display, input_path, *args, "-o", os.devnull])


def write_reproducer(directory: Path, text: str, args: tuple[str, ...], outcome: Outcome,
                     signature: str, origin: str, count: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / INPUT_NAME).write_text(text)
    what = ("timed out" if outcome.timed_out else
            "made PTX that ptxas refuses" if outcome.ptxas_error else
            "exited 1 without a message" if outcome.silent_failure else "crashed")
    ptxas_step = f"{outcome.ptxas_error.splitlines()[0]}\n" if outcome.ptxas_error else ""
    (directory / "cmd.txt").write_text(f"# run in this directory; the run {what}\n"
                                       + command_line("fa-opt", args) + "\n" + ptxas_step)
    (directory / "stderr.txt").write_text(outcome.stderr[-6000:] + (outcome.ptxas_error or ""))
    (directory / "info.json").write_text(json.dumps({
        "tool": TOOL_MARK, "signature": signature, "args": list(args), "origin": origin,
        "count": count, "returncode": outcome.returncode, "seconds": round(outcome.seconds, 2),
    }, indent=2) + "\n")


class Families:
    """Failures grouped by signature; each family keeps its smallest reproducer."""

    def __init__(self, out: Path):
        self.out = out
        self.by_signature: dict[str, Family] = {}
        self.lock = threading.Lock()

    def add(self, case: Case, outcome: Outcome) -> bool:
        """Records a failure; True when it starts a new family."""
        signature = signature_of(outcome, case.args)
        with self.lock:
            family = self.by_signature.get(signature)
            is_new = family is None
            if is_new:
                directory = self.out / f"{len(self.by_signature) + 1:02d}-{slug(signature)}"
                family = self.by_signature[signature] = Family(signature, directory, case, outcome)
            family.count += 1
            if is_new or size_of(case) < size_of(family.case):
                family.case, family.outcome = case, outcome
            write_reproducer(family.directory, family.case.text, family.case.args,
                             family.outcome, signature, family.case.origin, family.count)
            return is_new

    def summary(self) -> str:
        rows = ["| # | runs | family (signature) | reproducer |", "|---|---|---|---|"]
        for i, family in enumerate(self.by_signature.values(), 1):
            rows.append(f"| {i} | {family.count} | {family.signature.replace('|', '/')} "
                        f"| {family.directory} |")
        return "\n".join(rows)


def size_of(case: Case) -> tuple[int, int]:
    return (len(case.text) + sum(len(a) for a in case.args), case.index)


def clear_stale_reproducers(out: Path) -> None:
    """Removes what an earlier run of this script left under --out (nothing else)."""
    if not out.is_dir():
        return
    for info in out.glob("*/info.json"):
        try:
            if json.loads(info.read_text()).get("tool") == TOOL_MARK:
                shutil.rmtree(info.parent)
        except (OSError, ValueError):
            continue
    (out / "summary.md").unlink(missing_ok=True)


# --------------------------------------------------------------------------
# Minimising a reproducer: delta debugging over lines, then over arguments.
# --------------------------------------------------------------------------


class Minimiser:
    """Shrinks (text, args) while the failure keeps its signature, within a time budget."""

    def __init__(self, runner: Runner, signature: str, budget_seconds: float):
        self.runner = runner
        self.signature = signature
        self.deadline = time.monotonic() + budget_seconds
        self.last_outcome: Optional[Outcome] = None

    def reproduces(self, text: str, args: tuple[str, ...]) -> bool:
        if time.monotonic() > self.deadline:
            return False
        outcome = self.runner.run(text, args)
        if outcome.failed and signature_of(outcome, args) == self.signature:
            self.last_outcome = outcome
            return True
        return False

    def minimise(self, text: str, args: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        without_comments = "".join(l for l in text.splitlines(keepends=True)
                                   if not l.lstrip().startswith("//"))
        if without_comments != text and self.reproduces(without_comments, args):
            text = without_comments
        lines = self.ddmin(text.splitlines(keepends=True), lambda ls: self.reproduces("".join(ls), args))
        text = "".join(lines)
        args = tuple(self.ddmin(list(args), lambda a: self.reproduces(text, tuple(a))))
        return text, self.shrink_options(text, args)

    def shrink_options(self, text: str, args: tuple[str, ...]) -> tuple[str, ...]:
        """Drops the options of `--pass=a=1 b=2` one at a time where the failure stays."""
        args = list(args)
        for i, arg in enumerate(args):
            flag, sep, options = arg.partition("=")
            if not sep or flag.startswith("--pass-pipeline"):
                continue
            words = options.split(" ")
            for word in list(words):
                trial = [w for w in words if w != word]
                candidate = flag + ("=" + " ".join(trial) if trial else "")
                if self.reproduces(text, tuple(args[:i] + [candidate] + args[i + 1:])):
                    words, args[i] = trial, candidate
        return tuple(args)

    @staticmethod
    def ddmin(items: list, reproduces: Callable[[list], bool]) -> list:
        """Zeller's ddmin: remove chunks, then complements, halving the chunk size."""
        granularity = 2
        while len(items) >= 2:
            chunk = max(1, len(items) // granularity)
            subsets = [items[i:i + chunk] for i in range(0, len(items), chunk)]
            reduced = False
            for i in range(len(subsets)):
                complement = [x for j, s in enumerate(subsets) if j != i for x in s]
                if reproduces(complement):
                    items, granularity, reduced = complement, max(granularity - 1, 2), True
                    break
            if not reduced:
                if granularity >= len(items):
                    break
                granularity = min(len(items), granularity * 2)
        return items


def minimise_family(runner: Runner, family: Family, budget: float) -> None:
    minimiser = Minimiser(runner, family.signature, budget)
    text, args = minimiser.minimise(family.case.text, family.case.args)
    outcome = minimiser.last_outcome or family.outcome
    (family.directory / "original.mlir").write_text(family.case.text)
    family.case = dataclasses.replace(family.case, text=text, args=args)
    family.outcome = outcome
    write_reproducer(family.directory, text, args, outcome, family.signature,
                     family.case.origin, family.count)


def reduce_saved(directories: list[str], runner: Runner, budget: float) -> int:
    status = 0
    for name in directories:
        directory = Path(name)
        info = json.loads((directory / "info.json").read_text())
        text, args = (directory / INPUT_NAME).read_text(), tuple(info["args"])
        outcome = runner.run(text, args)
        if not outcome.failed:
            print(f"{directory}: no longer fails (exit status {outcome.returncode})")
            continue
        status = 1
        signature = signature_of(outcome, args)
        family = Family(signature, directory, Case(0, text, args, info.get("origin", "")),
                        outcome, info.get("count", 1))
        minimise_family(runner, family, budget)
        print(f"{directory}: {signature}\n  {command_line('fa-opt', family.case.args)} "
              f"({len(family.case.text.splitlines())} lines)")
    return status


# --------------------------------------------------------------------------
# The campaign.
# --------------------------------------------------------------------------


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Mutation fuzzer for fa-opt: reports crashes, fatal errors and hangs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 no failure, 1 at least one failure, 2 usage error.")
    parser.add_argument("--fa-opt", default=str(REPO_ROOT / "build/bin/fa-opt"),
                        help="the fa-opt binary (default: build/bin/fa-opt)")
    parser.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    parser.add_argument("--runs", type=int, help="number of cases (default: unlimited with "
                        "--time, else 200)")
    parser.add_argument("--time", type=float, help="stop starting new cases after SECONDS")
    parser.add_argument("--jobs", type=int, default=1, help="fa-opt processes at once (default 1)")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds before a run counts as a hang (default 20)")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="address-space limit per fa-opt run (default 4096 MiB)")
    parser.add_argument("--out", help="directory for reproducers (default: a new temp dir)")
    parser.add_argument("--minimize", action="store_true",
                        help="shrink each family's reproducer at the end")
    parser.add_argument("--minimize-budget", type=float, default=120.0,
                        help="seconds of minimisation per family (default 120)")
    parser.add_argument("--reduce", nargs="+", metavar="DIR",
                        help="only minimise saved reproducer directories, then exit")
    parser.add_argument("--seeds-root", default=str(REPO_ROOT),
                        help="project root holding examples/ and test/ (default: this repo)")
    parser.add_argument("--ptxas", metavar="PATH", help="also assemble the PTX of every clean "
                        "--fa-to-ptx run with this ptxas (each such run exports its PTX): a "
                        "refusal, e.g. too much shared memory, is a failure too")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    options = parser.parse_args(argv)
    if options.runs is None and options.time is None:
        options.runs = 200
    if options.jobs < 1 or options.timeout <= 0:
        parser.error("--jobs and --timeout must be positive")
    return options


def limit_child_resources(memory_mb: int) -> None:
    """Children inherit these: a runaway allocation fails instead of taking the machine."""
    limit = memory_mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))


def case_indices(runs: Optional[int]):
    index = 0
    while runs is None or index < runs:
        yield index
        index += 1


def campaign(options: argparse.Namespace, runner: Runner, families: Families) -> dict[str, int]:
    corpus_seeds = load_seeds(Path(options.seeds_root))
    corpus = Corpus.of(corpus_seeds)
    passes = discover_passes(options.fa_opt)
    order = discover_pipeline_order(options.fa_opt, passes)
    if not options.quiet:
        print(f"fuzz_fa_opt: {len(corpus.seeds)} seed cases, {len(passes)} passes "
              f"({', '.join(p.name for p in passes)}); pipeline order: {' '.join(order)}",
              file=sys.stderr)
    counts = {"runs": 0, "clean": 0, "diagnostic": 0, "failed": 0}
    deadline = time.monotonic() + options.time if options.time else None
    last_report = time.monotonic()
    lock = threading.Lock()

    def run_case(index: int) -> None:
        case = make_case(options.seed, index, corpus, passes, order, bool(options.ptxas))
        outcome = runner.run(case.text, case.args)
        with lock:
            counts["runs"] += 1
            counts["failed" if outcome.failed else
                   "clean" if outcome.returncode == 0 else "diagnostic"] += 1
        if outcome.failed and families.add(case, outcome) and not options.quiet:
            print(f"[case {index}] new family: {signature_of(outcome, case.args)}\n"
                  f"  {command_line('fa-opt', case.args)}  ({case.origin})", file=sys.stderr)

    with concurrent.futures.ThreadPoolExecutor(options.jobs) as pool:
        pending: set[concurrent.futures.Future] = set()
        for index in case_indices(options.runs):
            if deadline and time.monotonic() > deadline:
                break
            if len(pending) >= options.jobs * 2:
                done, pending = concurrent.futures.wait(
                    pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    future.result()
            pending.add(pool.submit(run_case, index))
            if not options.quiet and time.monotonic() - last_report > 30:
                last_report = time.monotonic()
                print(f"fuzz_fa_opt: {counts['runs']} runs, {counts['diagnostic']} diagnostics, "
                      f"{counts['failed']} failures in {len(families.by_signature)} families",
                      file=sys.stderr)
        for future in concurrent.futures.as_completed(pending):
            future.result()
    return counts


def main(argv: list[str]) -> int:
    options = parse_arguments(argv)
    if not (os.path.isfile(options.fa_opt) and os.access(options.fa_opt, os.X_OK)):
        print(f"fuzz_fa_opt: fa-opt not found at {options.fa_opt} (build it, or pass --fa-opt)",
              file=sys.stderr)
        return 2
    options.fa_opt = os.path.abspath(options.fa_opt)
    if options.ptxas:
        ptxas = shutil.which(options.ptxas)
        if not ptxas:
            print(f"fuzz_fa_opt: ptxas not found at {options.ptxas}", file=sys.stderr)
            return 2
        options.ptxas = os.path.abspath(ptxas)
    limit_child_resources(options.memory_mb)
    with tempfile.TemporaryDirectory(prefix="fuzz-fa-opt-") as scratch:
        runner = Runner(options.fa_opt, options.timeout, Path(scratch), options.ptxas)
        if options.reduce:
            return reduce_saved(options.reduce, runner, options.minimize_budget)
        out = Path(options.out) if options.out else Path(tempfile.mkdtemp(prefix="fuzz-fa-opt-out-"))
        clear_stale_reproducers(out)
        out.mkdir(parents=True, exist_ok=True)
        families = Families(out)
        start = time.monotonic()
        try:
            counts = campaign(options, runner, families)
        except OSError as error:
            print(f"fuzz_fa_opt: cannot run {options.fa_opt}: {error}", file=sys.stderr)
            return 2
        if options.minimize:
            for family in families.by_signature.values():
                minimise_family(runner, family, options.minimize_budget)
        summary = (f"fuzz_fa_opt: seed {options.seed}, {counts['runs']} runs in "
                   f"{time.monotonic() - start:.0f} s: {counts['clean']} clean, "
                   f"{counts['diagnostic']} diagnostics, {counts['failed']} failures in "
                   f"{len(families.by_signature)} families")
        table = families.summary() if families.by_signature else "no failures"
        (out / "summary.md").write_text(summary + "\n\n" + table + "\n")
        print(summary)
        print(table)
        if families.by_signature:
            print(f"reproducers: {out}/*/ (cmd.txt, {INPUT_NAME}, stderr.txt)")
        return 1 if families.by_signature else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
