#!/usr/bin/env bash
# fa-run of a6aa9ef (before the issue-19 driver) vs HEAD on identical inputs:
# written .npy files must be byte-identical, reports equal but for timings.
set -u
out=$1; mkdir -p $out/old $out/new $out/in
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 - $out/in <<'PY'
import sys, numpy as np
d=sys.argv[1]; r=np.random.default_rng(7)
for n,s in [("q",(2,8,1000,64)),("k",(2,2,1000,64)),("v",(2,2,1000,64)),("dout",(2,8,1000,64))]:
    np.save(f"{d}/{n}.npy", r.standard_normal(s).astype(np.float16))
np.save(f"{d}/x.npy", r.standard_normal((4,300,1024)).astype(np.float16))
np.save(f"{d}/dy.npy", r.standard_normal((4,300,1024)).astype(np.float16))
np.save(f"{d}/w.npy", r.standard_normal(1024).astype(np.float16))
np.save(f"{d}/b.npy", r.standard_normal(1024).astype(np.float16))
PY
K=.carry/kernels; I=$out/in
for v in old new; do
  bin=.carry/bin/fa-run; [ $v = old ] && bin=.carry/bin/fa-run-a6aa9ef
  o=$out/$v
  for causal in "" "--causal"; do
    tag=attn${causal:+-causal}
    $bin attention --kernels $K --dtype f16 $causal --no-tuning --q $I/q.npy --k $I/k.npy --v $I/v.npy --out $o/$tag-o.npy --lse $o/$tag-l.npy --grad --dout $I/dout.npy --dq $o/$tag-dq.npy --dk $o/$tag-dk.npy --dv $o/$tag-dv.npy --check --json > $o/$tag.json 2>&1; echo "$v $tag rc=$?" >> $out/rc.txt
  done
  $bin layernorm --kernels $K --dtype f16 --x $I/x.npy --weight $I/w.npy --bias $I/b.npy --grad --dy $I/dy.npy --y $o/y.npy --mean $o/mean.npy --rstd $o/rstd.npy --dx $o/dx.npy --dweight $o/dw.npy --dbias $o/db.npy --check --json > $o/ln.json 2>&1; echo "$v ln rc=$?" >> $out/rc.txt
  $bin attention --kernels $K --dtype bf16 --batch 3 --heads 5 --kv-heads 1 --seq 777 --kv-seq 1500 --dim 128 --grad --check > $o/rand-attn.txt 2>&1; echo "$v rand-attn rc=$?" >> $out/rc.txt
  $bin layernorm --kernels $K --dtype bf16 --rows 999 --cols 4096 --grad --check > $o/rand-ln.txt 2>&1; echo "$v rand-ln rc=$?" >> $out/rc.txt
done
cat $out/rc.txt
for f in $out/old/*.npy; do cmp -s $f $out/new/$(basename $f) && echo "same $(basename $f)" || echo "DIFFERS $(basename $f)"; done
for f in $out/old/*.json $out/old/*.txt; do
  diff <(grep -v -iE 'ms|time|tflop|gb/s|free|bytes' $f) <(grep -v -iE 'ms|time|tflop|gb/s|free|bytes' $out/new/$(basename $f)) >/dev/null && echo "same report $(basename $f)" || { echo "REPORT DIFFERS $(basename $f)"; diff $f $out/new/$(basename $f) | head -20; }
done
# Speed: both binaries, interleaved twice, same kernels.
for round in 1 2; do for v in old new; do
  bin=.carry/bin/fa-run; [ $v = old ] && bin=.carry/bin/fa-run-a6aa9ef
  echo "== round $round $v attention B4 H16 N4096 D128 bf16 fwd+bwd"; $bin attention --kernels $K --dtype bf16 --batch 4 --heads 16 --seq 4096 --dim 128 --grad --bench --runs 50 2>&1 | grep -iE 'tflop|ms'
  echo "== round $round $v layernorm 32768 x 4096 bf16 fwd+bwd"; $bin layernorm --kernels $K --dtype bf16 --rows 32768 --cols 4096 --grad --bench --runs 50 2>&1 | grep -iE 'gb/s|ms'
done; done
