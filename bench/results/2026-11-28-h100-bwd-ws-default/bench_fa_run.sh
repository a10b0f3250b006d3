# Same run, H100: the previous D=128 backward defaults (128 x 32 without a
# producer, plain and causal; old128) against the new library defaults
# (warp-specialised 128 x 64) through fa-run, then the library against
# SDPA's cuDNN and FA2 (bench_attention_bwd.py).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
F=.carry/bin/fa-run
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for c in "" "--causal"; do for nb in "1024 16" "4096 4" "16384 1"; do set -- $nb
  for dir in exp/old128 kernels; do
    out=$($F attention --batch $2 --heads 16 --seq $1 --dim 128 --dtype bf16 --grad --bench $c --kernels .carry/$dir 2>&1)
    echo "BENCH $dir d128 ${c:-full} N=$1: $(echo "$out" | grep -E 'bench' | tr -s ' ' | tr '\n' '|')"
  done
done; done
