#!/usr/bin/env bash
# Checks every forward attention kernel of the library whose name matches
# REGEX (tuning candidates included, not only each group's default) against
# the fp64 reference: B=2, H=4, Hk=2 (GQA), seq 1..4096 including lengths that
# are not multiples of any tile, NaN-poisoned outputs (fa-run --check). Prints
# and writes OUT_DIR/check_candidates.md; exits non-zero when any row fails.
#
#   (device) bash bench/check_candidates.sh .carry "$OUT" 'g$'
set -uo pipefail
usage="usage: check_candidates.sh CARRY_DIR OUT_DIR [REGEX]"
carry=${1:?$usage}
out=${2:?$usage}
regex=${3:-.}
fa_run="$carry/bin/fa-run"
kernels="$carry/kernels"
mkdir -p "$out"
status=0
candidates=$(python3 - "$kernels/manifest.json" "$regex" <<'PY'
import json, re, sys
manifest, regex = sys.argv[1:]
for k in json.load(open(manifest))["kernels"]:
    if k["op"] == "attention_fwd" and re.search(regex, k["name"]):
        print(k["name"], k["dtype"], k["head_dim"], int(k["causal"]))
PY
)
{
  printf "| kernel | seq | out rel | lse rel | result |\n|---|---|---|---|---|\n"
  while read -r name dtype dim causal; do
    [ -z "$name" ] && continue
    flag=""; [ "$causal" = 1 ] && flag=--causal
    for seq in 1 17 128 1000 4096; do
      json=$("$fa_run" attention --batch 2 --heads 4 --kv-heads 2 --seq "$seq" --dim "$dim" \
             --dtype "$dtype" $flag --check --kernels "$kernels" --kernel "$name" --json 2>&1)
      rc=$?
      python3 - "$name" "$seq" "$rc" "$json" <<'PY'
import json, sys
name, seq, rc, text = sys.argv[1:]
try:
    c = json.loads(text).get("check", {})
    print(f"| {name} | {seq} | {c['out']['rel']:.2e} | {c['lse']['rel']:.2e} | "
          f"{'pass' if rc == '0' else 'FAIL'} |")
except Exception:
    print(f"| {name} | {seq} | | | FAIL: {text.strip()[-200:]} |")
PY
    done
  done <<< "$candidates"
} | tee "$out/check_candidates.md"
grep -q FAIL "$out/check_candidates.md" && status=1
exit $status
