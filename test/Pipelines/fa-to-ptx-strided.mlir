// RUN: rm -rf %t && fa-opt %s --fa-to-ptx="export-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/strided.ptx
// RUN: FileCheck %s --check-prefix=CONTIGUOUS < %t/contiguous.ptx
// RUN: FileCheck %s --check-prefix=BWD < %t/strided_bwd.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// A kernel on strided views reads each view's offset and strides from its
// descriptor: q's parameters are slots 0-10 (allocated and aligned pointer,
// offset, sizes[4], strides[4]), its offset slot 2 and its seq stride slot
// 9; k's offset and seq stride slots 13 and 20. A contiguous kernel of the
// same configuration knows its seq stride (head_dim) and never loads it.
// PTX: .visible .entry strided(
// PTX-DAG: ld.param.b64 %rd{{[0-9]+}}, [strided_param_2];
// PTX-DAG: ld.param.b64 %rd{{[0-9]+}}, [strided_param_9];
// PTX-DAG: ld.param.b64 %rd{{[0-9]+}}, [strided_param_13];
// PTX-DAG: ld.param.b64 %rd{{[0-9]+}}, [strided_param_20];
// CONTIGUOUS: .visible .entry contiguous(
// CONTIGUOUS-NOT: [contiguous_param_2]
// CONTIGUOUS-NOT: [contiguous_param_9]
// CONTIGUOUS-NOT: [contiguous_param_20]
// CONTIGUOUS: ret;

// The backward's dQ kernel (parameters q, k, v, dout, lse, delta, dq) reads
// dout through its view (slots 33-43, seq stride 42) and writes dq through
// its own (slots 62-72: offset 64, seq stride 71).
// BWD: .visible .entry strided_bwd(
// BWD-DAG: ld.param.b64 %rd{{[0-9]+}}, [strided_bwd_param_9];
// BWD-DAG: ld.param.b64 %rd{{[0-9]+}}, [strided_bwd_param_42];
// BWD-DAG: ld.param.b64 %rd{{[0-9]+}}, [strided_bwd_param_64];
// BWD-DAG: ld.param.b64 %rd{{[0-9]+}}, [strided_bwd_param_71];

// The manifest marks the views' parameters "strided" (the runtime passes a
// view's strides to them) and no other.
// MANIFEST: "name": "strided",
// MANIFEST: "name": "q",
// MANIFEST-NEXT: "rank": 4,
// MANIFEST-NEXT: "strided": true
// MANIFEST: "name": "out",
// MANIFEST-NEXT: "rank": 4,
// MANIFEST-NEXT: "strided": true
// MANIFEST: "name": "lse",
// MANIFEST-NEXT: "rank": 3
// MANIFEST-NEXT: }
// MANIFEST: "name": "strided_bwd",
// MANIFEST: "name": "dq",
// MANIFEST-NEXT: "rank": 4,
// MANIFEST-NEXT: "strided": true

// The forwards take the tile that reads q, k and v through their
// descriptors (the warp-specialised default loads them by TMA, through
// tensor maps the runtime encodes with the views' strides).
#one_warpgroup = #fa.tile<block_m = 64, block_n = 128, num_warps = 4, q_in_shared = true, num_stages = 2, skip_unit_rescale = false, wgmma = true>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1], offset: ?>>
!c = memref<?x?x?x64xbf16>
!s = memref<?x?x?xf32>
func.func @strided(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !s) attributes {fa.tile = #one_warpgroup} {
  fa.attention ins(%q, %k, %v : !t, !t, !t) outs(%o : !t) lse(%lse : !s) causal
  return
}

func.func @contiguous(%q: !c, %k: !c, %v: !c, %o: !c, %lse: !s) attributes {fa.tile = #one_warpgroup} {
  fa.attention ins(%q, %k, %v : !c, !c, !c) outs(%o : !c) lse(%lse : !s) causal
  return
}

func.func @strided_bwd(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !s, %dq: !t, %dk: !t, %dv: !t) {
  fa.attention_grad ins(%q, %k, %v, %o, %do, %lse : !t, !t, !t, !t, !t, !s) outs(%dq, %dk, %dv : !t, !t, !t) causal
  return
}
