# fa-run --check (fp64 reference) of the library's new D=128 backward default
# (warp-specialised 128 x 64) at odd shapes, bf16 and f16, contiguous.
F=.carry/bin/fa-run
for dt in bf16 f16; do
  for shape in "--batch 1 --heads 3 --seq 1" "--batch 2 --heads 4 --kv-heads 2 --seq 17" "--batch 1 --heads 8 --kv-heads 2 --seq 333" "--batch 1 --heads 2 --seq 1000" "--batch 1 --heads 4 --kv-heads 2 --seq 4097"; do
    out=$($F attention $shape --dim 128 --dtype $dt --grad --check --kernels .carry/kernels 2>&1); rc=$?
    echo "CHECK $dt [$shape] rc=$rc $(echo "$out" | grep -iE 'kernel|dq|dk|dv|error|fail|pass' | tr -s ' ' | tr '\n' '|' | cut -c1-400)"
  done
done
