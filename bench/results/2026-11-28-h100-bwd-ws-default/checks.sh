# fa-run --check (fp64 reference) of the library's new D=128 backward
# defaults (warp-specialised 128 x 64), plain and causal, at odd shapes,
# bf16 and f16, contiguous.
F=.carry/bin/fa-run
for dt in bf16 f16; do for c in "" "--causal"; do
  for shape in "--batch 1 --heads 3 --seq 1" "--batch 2 --heads 4 --kv-heads 2 --seq 17" "--batch 1 --heads 8 --kv-heads 2 --seq 333" "--batch 1 --heads 2 --seq 1000" "--batch 1 --heads 4 --kv-heads 2 --seq 4097"; do
    out=$($F attention $shape --dim 128 --dtype $dt --grad --check $c --kernels .carry/kernels 2>&1); rc=$?
    echo "CHECK $dt ${c:-full} [$shape] rc=$rc $(echo "$out" | grep -iE 'grad |check|error|fail' | tr -s ' ' | tr '\n' '|')"
  done
done; done
