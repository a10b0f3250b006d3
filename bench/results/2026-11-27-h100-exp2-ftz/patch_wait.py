"""Experiment: move the P@V wgmma wait out of the softmax block into the rescale branch and the join."""
import sys, re
src = open(sys.argv[1]).read().split('\n')
ftz = '--ftz' in sys.argv
moves = '--move' in sys.argv
W = '\twgmma.wait_group.sync.aligned 0;'
drop, after = set(), {}
if moves:
    for i, l in enumerate(src):
        if l.strip() != 'wgmma.wait_group.sync.aligned 0;':
            continue
        for j in range(i + 1, min(i + 30, len(src))):
            if 'vote.sync.any.pred' in src[j]:
                for k in range(j + 1, j + 4):
                    mm = re.match(r'\s*@%p\d+ bra\s+(\$L__BB\d+_\d+);', src[k])
                    if mm:
                        drop.add(i); after[k] = True; after[mm.group(1) + ':'] = True
                break
out = []
for i, l in enumerate(src):
    if i in drop:
        continue
    if ftz:
        l = l.replace('ex2.approx.f32', 'ex2.approx.ftz.f32')
    out.append(l)
    if after.get(i) or after.get(l.strip()):
        out.append(W)
open(sys.argv[2], 'w').write('\n'.join(out))
print(sys.argv[1], 'moved', len(drop))
