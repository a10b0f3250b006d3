// RUN: fa-opt %s --convert-fa-to-nvgpu --canonicalize --cse --split-input-file | FileCheck %s

// Input: fa.tile_matmul and copies in kernels with fa.tile wgmma = 1: one
// warpgroup (known_block_size 128, 64 rows), bf16 tiles of head_dim 64 in
// shared memory (one 128-byte swizzle atom per row).

// A product is one asm block that issues it (fence, one wgmma per 16-wide
// k step, commit) and one that waits for it, the results passing through as
// tied operands. Shared operands go through matrix descriptors: address bits
// 4-17, stride byte offset 1024 (64 at bit 32), leading byte offset 1 (bit
// 16), 128-byte swizzle (bit 62); the k steps advance 32 bytes each. The
// scores start from zero: the first step's scale-d is 0 (operand $16 is 0),
// the others accumulate. Q and K are K-major (transpose-a 0, transpose-b 0).
// CHECK-LABEL: gpu.func @scores
// CHECK-SAME: workgroup(%[[QB:[^ ]+]] : {{.*}}, %[[KB:[^ ]+]] :
// CHECK: %[[Q:.*]] = memref.extract_aligned_pointer_as_index %[[QB]]
// CHECK: %[[Q_ADDRESS:.*]] = arith.addi %[[Q]], %{{.*}} : index
// CHECK: %[[Q_ADDRESS_I64:.*]] = arith.index_castui %[[Q_ADDRESS]] : index to i64
// CHECK: %[[Q_LOW:.*]] = arith.andi %[[Q_ADDRESS_I64]], %c262143_i64
// CHECK: %[[Q_UNITS:.*]] = arith.shrui %[[Q_LOW]], %c4_i64
// CHECK: %[[Q_DESC:.*]] = arith.ori %[[Q_UNITS]], %c4611686293305360384_i64
// CHECK: %[[K:.*]] = memref.extract_aligned_pointer_as_index %[[KB]]
// CHECK: %[[K_DESC:.*]] = arith.ori %{{.*}}, %c4611686293305360384_i64
// CHECK: arith.addi %[[K]], %c32
// CHECK: arith.addi %[[K]], %c64
// CHECK: arith.addi %[[K]], %c96
// CHECK: %[[ISSUE:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred first, rest;
// CHECK-SAME: setp.ne.b32 first, $16, 0;
// CHECK-SAME: wgmma.fence.sync.aligned;
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7}, $8, $9, first, 1, 1, 0, 0;
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {$0, {{.*}}, $7}, $10, $11, rest, 1, 1, 0, 0;
// CHECK-SAME: $12, $13, rest, 1, 1, 0, 0;
// CHECK-SAME: $14, $15, rest, 1, 1, 0, 0;
// CHECK-SAME: wgmma.commit_group.sync.aligned;\0A}"
// CHECK-SAME: "=f,=f,=f,=f,=f,=f,=f,=f,l,l,l,l,l,l,l,l,r,r,~{memory}" %[[Q_DESC]], %[[K_DESC]],
// CHECK-SAME: %c0_i32, %c1_i32 :
// CHECK: %[[ISSUED0:.*]] = llvm.extractvalue %[[ISSUE]][0]
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK-SAME: "=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,~{memory}" %[[ISSUED0]],
// CHECK-NOT: llvm.inline_asm
// CHECK-NOT: nvgpu.ldmatrix
// CHECK-NOT: nvvm.mma.sync
!q = memref<64x64xbf16, #gpu.address_space<workgroup>>
!k = memref<16x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @scores(%o: memref<?x?x?x16xf32>, %b: index, %h: index, %row0: index) workgroup(%qb : !q, %kb : !k) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 128, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<64x16xf32>
    %s = fa.tile_matmul %qb, %kb, %zero transpose_b : !q, !k, vector<64x16xf32>
    fa.store_tile %s, %o[%b, %h, %row0] : vector<64x16xf32>, memref<?x?x?x16xf32>
    gpu.return
  }
}

// -----

// Each product is waited for just before its first use, leaving pending
// the products issued after it (commit groups complete in order): two
// products go out back to back, the first is waited for with one pending
// (wait 1), the second with none (wait 0). P @ V takes P from registers
// ({$64, ...}: the accumulator fragment layout as it is) and V through an
// MN-major descriptor (transpose-b 1), accumulating (scale-d operand 1, the
// accumulator tied to the results).
// CHECK-LABEL: gpu.func @pending_products
// CHECK: %[[FIRST:.*]] = llvm.inline_asm {{.*}}wgmma.commit_group.sync.aligned
// CHECK: %[[FIRST0:.*]] = llvm.extractvalue %[[FIRST]][0]
// CHECK-NOT: wgmma.wait_group
// CHECK: %[[SECOND:.*]] = llvm.inline_asm {{.*}}wgmma.commit_group.sync.aligned
// CHECK: %[[SECOND0:.*]] = llvm.extractvalue %[[SECOND]][0]
// CHECK-NOT: math.exp2
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 1;"
// CHECK-SAME: %[[FIRST0]],
// CHECK: math.exp2
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK-SAME: %[[SECOND0]],
// CHECK: arith.addf
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred first, rest;
// CHECK-SAME: setp.ne.b32 first, $69, 0;
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, {$64, $65, $66, $67}, $68, first, 1, 1, 1;
// CHECK-SAME: "=f,{{.*}},=f,0,1,{{.*}},31,r,r,r,r,l,r,r,~{memory}"
// CHECK-SAME: %c1_i32, %c1_i32 :
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// CHECK-NOT: llvm.inline_asm
!kv = memref<?x?x?x64xbf16>
!q = memref<64x64xbf16, #gpu.address_space<workgroup>>
!k = memref<16x64xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @pending_products(%o: !kv, %acc_in: memref<?x?x?x64xf32>, %b: index, %h: index, %row0: index) workgroup(%qb : !q, %kb : !k, %vb : !k) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 128, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<64x16xf32>
    %acc = fa.load_tile %acc_in[%b, %h, %row0] : memref<?x?x?x64xf32> -> vector<64x64xf32>
    %s = fa.tile_matmul %qb, %kb, %zero transpose_b : !q, !k, vector<64x16xf32>
    %s2 = fa.tile_matmul %qb, %vb, %zero transpose_b : !q, !k, vector<64x16xf32>
    %e = math.exp2 %s : vector<64x16xf32>
    %sum = arith.addf %e, %s2 : vector<64x16xf32>
    %p = arith.truncf %sum : vector<64x16xf32> to vector<64x16xbf16>
    %out = fa.tile_matmul %p, %vb, %acc : vector<64x16xbf16>, !k, vector<64x64xf32>
    %out_bf16 = arith.truncf %out : vector<64x64xf32> to vector<64x64xbf16>
    fa.store_tile %out_bf16, %o[%b, %h, %row0] : vector<64x64xbf16>, !kv
    gpu.return
  }
}

// -----

// Copies for wgmma write the 128-byte swizzle wgmma reads, rows longer
// than 128 bytes as 128-byte panels: with 256-byte rows, panel row
// r = panel * 16 + row lands at memref row r / 2, half r % 2. A wait adds an
// async-proxy fence before the barrier, so that wgmma (the async proxy) sees
// the copied tiles.
// CHECK-LABEL: gpu.func @panels
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] :
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[ROW:.*]] = arith.divui %[[TID]], %c16
// CHECK: %[[CHUNK:.*]] = arith.remui %[[TID]], %c16
// CHECK: %[[PANEL:.*]] = arith.divui %[[CHUNK]], %c8
// CHECK: %[[PANEL_ROW0:.*]] = arith.muli %[[PANEL]], %c16
// CHECK: %[[PANEL_ROW:.*]] = arith.addi %[[PANEL_ROW0]], %[[ROW]]
// CHECK: %[[MEMREF_ROW:.*]] = arith.divui %[[PANEL_ROW]], %c2
// CHECK: %[[HALF:.*]] = arith.remui %[[PANEL_ROW]], %c2
// CHECK: %[[HALF_CHUNKS:.*]] = arith.muli %[[HALF]], %c8
// CHECK: %[[DEST_CHUNK:.*]] = arith.addi %[[HALF_CHUNKS]], %{{.*}}
// CHECK: %[[DEST_COL:.*]] = arith.muli %[[DEST_CHUNK]], %c8
// CHECK: nvgpu.device_async_copy {{.*}}, %{{.*}}[%[[MEMREF_ROW]], %[[DEST_COL]]], 8,
// CHECK: nvgpu.device_async_copy
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
!t = memref<?x?x?x128xbf16>
!smem = memref<16x128xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @panels(%k: !t, %b: index, %h: index, %row0: index) workgroup(%kb : !smem) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 128, 1, 1>} {
    fa.copy_tile_async %k[%b, %h, %row0] into %kb : !t, !smem
    fa.wait_tiles
    gpu.return
  }
}

// -----

// Rows of 64 bytes (f16/bf16 head_dim 32) take wgmma's 64-byte swizzle:
// descriptors with swizzle mode 2 (bit 63), stride byte offset 512 (8 rows of
// 64 bytes: 32 at bit 32); a warpgroup's 64 rows of Q are 4096 bytes in; the
// second k step is 32 bytes along the row. V with 192-byte rows (head_dim 96)
// is three 64-byte panels: its MN-major descriptor's leading byte offset is
// one panel, 16 rows x 64 bytes (1024: 64 at bit 16), and P @ V is 96 wide.
// CHECK-LABEL: gpu.func @swizzle_64b
// CHECK-DAG: %[[V_FIELDS:.*]] = arith.constant -9223371899411628032 : i64
// CHECK-DAG: %[[K_FIELDS:.*]] = arith.constant -9223371899415756800 : i64
// CHECK: %[[WARPGROUP:.*]] = arith.divui %{{.*}}, %c128
// CHECK: %[[Q_ROWS:.*]] = arith.muli %[[WARPGROUP]], %c4096
// CHECK: arith.addi %[[Q_ROWS]], %c32
// CHECK: wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16
// CHECK: %[[V:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<16x96xbf16
// CHECK: arith.ori %{{.*}}, %[[V_FIELDS]]
// CHECK: wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {{.*}}, first, 1, 1, 1;
!kv = memref<?x?x?x96xbf16>
!q = memref<64x32xbf16, #gpu.address_space<workgroup>>
!k = memref<16x32xbf16, #gpu.address_space<workgroup>>
!v = memref<16x96xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @swizzle_64b(%o: !kv, %b: index, %h: index, %row0: index) workgroup(%qb : !q, %kb : !k, %vb : !v) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 128, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<64x16xf32>
    %zero96 = arith.constant dense<0.0> : vector<64x96xf32>
    %s = fa.tile_matmul %qb, %kb, %zero transpose_b : !q, !k, vector<64x16xf32>
    %p = arith.truncf %s : vector<64x16xf32> to vector<64x16xbf16>
    %out = fa.tile_matmul %p, %vb, %zero96 : vector<64x16xbf16>, !v, vector<64x96xf32>
    %out_bf16 = arith.truncf %out : vector<64x96xf32> to vector<64x96xbf16>
    fa.store_tile %out_bf16, %o[%b, %h, %row0] : vector<64x96xbf16>, !kv
    gpu.return
  }
}

// -----

// Copies write the same 64-byte swizzle: 12 chunks a row (head_dim 96 of
// bf16), chunk c of row r at chunk (c % 4) ^ ((r / 2) % 4) of panel c / 4,
// panel row p = (c / 4) * 32 + r at memref row p / 3, chunk (p % 3) * 4 + that.
// An 8-chunk swizzle would XOR chunks 8-11 past the row's end.
// CHECK-LABEL: gpu.func @panels_64b
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[ROW:.*]] = arith.divui %[[TID]], %c12
// CHECK: %[[CHUNK:.*]] = arith.remui %[[TID]], %c12
// CHECK: %[[ROW_PAIR:.*]] = arith.divui %[[ROW]], %c2
// CHECK: %[[PHASE:.*]] = arith.remui %[[ROW_PAIR]], %c4
// CHECK: %[[LOW_CHUNK:.*]] = arith.remui %[[CHUNK]], %c4
// CHECK: %[[SWIZZLED:.*]] = arith.xori %[[LOW_CHUNK]], %[[PHASE]]
// CHECK: %[[PANEL:.*]] = arith.divui %[[CHUNK]], %c4
// CHECK: %[[PANEL_ROW0:.*]] = arith.muli %[[PANEL]], %c32
// CHECK: %[[PANEL_ROW:.*]] = arith.addi %[[PANEL_ROW0]], %[[ROW]]
// CHECK: %[[MEMREF_ROW:.*]] = arith.divui %[[PANEL_ROW]], %c3
// CHECK: %[[THIRD:.*]] = arith.remui %[[PANEL_ROW]], %c3
// CHECK: %[[THIRD_CHUNKS:.*]] = arith.muli %[[THIRD]], %c4
// CHECK: %[[DEST_CHUNK:.*]] = arith.addi %[[THIRD_CHUNKS]], %[[SWIZZLED]]
// CHECK: %[[DEST_COL:.*]] = arith.muli %[[DEST_CHUNK]], %c8
// CHECK: nvgpu.device_async_copy {{.*}}, %{{.*}}[%[[MEMREF_ROW]], %[[DEST_COL]]], 8,
!t = memref<?x?x?x96xbf16>
!smem = memref<32x96xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @panels_64b(%k: !t, %b: index, %h: index, %row0: index) workgroup(%kb : !smem) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 128, 1, 1>} {
    fa.copy_tile_async %k[%b, %h, %row0] into %kb : !t, !smem
    fa.wait_tiles
    gpu.return
  }
}

// -----

// transpose_a: the backward's dQ^T = K^T dS^T reads the key tile as staged,
// [128 keys][128 head_dim] of bf16 (K x M), as an MN-major A (transpose-a
// 1). Its 256-byte rows are two 128-byte panels of 128 rows x 128 bytes =
// 16384 bytes, panel p holding head_dim columns [64p, 64p + 64). With 8 warps
// warpgroup w multiplies rows [64w, 64w + 64) of dQ^T, i.e. head_dim columns
// [64w, 64w + 64): panel w, 16384 w bytes in. A k step is 16 rows (keys)
// down: 2048 bytes. A's descriptor (after CUTLASS's make_gmma_desc for
// MN-major SW128): leading byte offset = the distance between 64-column
// atoms = one panel, 16384 (1024 at bit 16); stride byte offset = the
// distance between 8-row groups along K = one swizzle atom, 1024 (64 at
// bit 32); 128-byte swizzle (1 at bit 62): 4611686293372403712. dS^T is
// stored [64 queries][128 keys] (transpose_b): K-major (transpose-b 0), the
// K-major fields (leading byte offset 1 unit) 4611686293305360384, k steps
// 32 bytes along a panel, then the next panel (64 rows x 128 bytes = 8192).
// CHECK-LABEL: gpu.func @transposed_a(
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] : memref<128x128xbf16, #gpu.address_space<workgroup>>, %[[DB:[^ ]+]] :
// CHECK-DAG: %[[A_FIELDS:.*]] = arith.constant 4611686293372403712 : i64
// CHECK-DAG: %[[B_FIELDS:.*]] = arith.constant 4611686293305360384 : i64
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[WARPGROUP:.*]] = arith.divui %[[TID]], %c128
// CHECK: %[[PANEL:.*]] = arith.muli %[[WARPGROUP]], %c16384
// CHECK: %[[K:.*]] = memref.extract_aligned_pointer_as_index %[[KB]]
// CHECK: %[[A0:.*]] = arith.addi %[[K]], %[[PANEL]]
// CHECK: %[[A0_I64:.*]] = arith.index_castui %[[A0]]
// CHECK: %[[A0_LOW:.*]] = arith.andi %[[A0_I64]], %c262143_i64
// CHECK: %[[A0_UNITS:.*]] = arith.shrui %[[A0_LOW]], %c4_i64
// CHECK: %[[A0_DESC:.*]] = arith.ori %[[A0_UNITS]], %[[A_FIELDS]]
// CHECK: %[[D:.*]] = memref.extract_aligned_pointer_as_index %[[DB]]
// CHECK: %[[B0_DESC:.*]] = arith.ori %{{.*}}, %[[B_FIELDS]]
// CHECK: %[[STEP1:.*]] = arith.addi %[[PANEL]], %c2048
// CHECK: arith.addi %[[K]], %[[STEP1]]
// CHECK: %[[A1_DESC:.*]] = arith.ori %{{.*}}, %[[A_FIELDS]]
// CHECK: arith.addi %[[D]], %c32
// CHECK: %[[B1_DESC:.*]] = arith.ori %{{.*}}, %[[B_FIELDS]]
// CHECK: arith.addi %[[PANEL]], %c4096
// CHECK: arith.addi %[[PANEL]], %c6144
// CHECK: arith.addi %[[PANEL]], %c8192
// CHECK: arith.addi %[[D]], %c8192
// CHECK: arith.addi %[[PANEL]], %c10240
// CHECK: arith.addi %[[PANEL]], %c12288
// CHECK: arith.addi %[[PANEL]], %c14336
// CHECK: arith.addi %[[D]], %c8288
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred first, rest;
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, $32, $33, first, 1, 1, 1, 0;
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, $34, $35, rest, 1, 1, 1, 0;
// CHECK-SAME: $46, $47, rest, 1, 1, 1, 0;
// CHECK-SAME: wgmma.commit_group.sync.aligned;\0A}"
// CHECK-SAME: %[[A0_DESC]], %[[B0_DESC]], %[[A1_DESC]], %[[B1_DESC]],
// CHECK: wgmma.wait_group.sync.aligned 0;
!o = memref<?x?x?x64xf32>
!k = memref<128x128xbf16, #gpu.address_space<workgroup>>
!dst = memref<64x128xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @transposed_a(%o: !o, %b: index, %h: index, %row0: index) workgroup(%kb : !k, %db : !dst) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 256, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<128x64xf32>
    %dq = fa.tile_matmul %kb, %db, %zero transpose_a transpose_b : !k, !dst, vector<128x64xf32>
    fa.store_tile %dq, %o[%b, %h, %row0] : vector<128x64xf32>, !o
    gpu.return
  }
}

// -----

// A transposed A of one panel: [128 keys][64 head_dim], one warpgroup. Its
// descriptor's fields are the two-panel tile's (a panel is 128 rows x 128
// bytes either way; with 64 columns the leading byte offset is never
// stepped over). B = dS^T stored [128 keys][32 queries] (no transpose_b) is
// MN-major too (transpose-b 1): 64-byte rows take the 64-byte swizzle (2 at
// bit 62), stride byte offset 8 rows x 64 bytes = 512 (32 at bit 32),
// leading byte offset one panel of 128 x 64 = 8192 bytes (512 at bit 16),
// k steps 16 rows x 64 bytes = 1024 bytes down.
// CHECK-LABEL: gpu.func @transposed_a_one_panel
// CHECK-DAG: %[[A_FIELDS:.*]] = arith.constant 4611686293372403712 : i64
// CHECK-DAG: %[[B_FIELDS:.*]] = arith.constant -9223371899382267904 : i64
// CHECK: %[[WARPGROUP:.*]] = arith.divui %{{.*}}, %c128
// CHECK: %[[PANEL:.*]] = arith.muli %[[WARPGROUP]], %c16384
// CHECK: arith.ori %{{.*}}, %[[A_FIELDS]]
// CHECK: %[[D:.*]] = memref.extract_aligned_pointer_as_index
// CHECK: arith.ori %{{.*}}, %[[B_FIELDS]]
// CHECK: arith.addi %[[PANEL]], %c2048
// CHECK: arith.addi %[[D]], %c1024
// CHECK: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {$0, {{.*}}, $15}, $16, $17, first, 1, 1, 1, 1;
!o = memref<?x?x?x32xf32>
!k = memref<128x64xbf16, #gpu.address_space<workgroup>>
!ds = memref<128x32xbf16, #gpu.address_space<workgroup>>
gpu.module @m {
  gpu.func @transposed_a_one_panel(%o: !o, %b: index, %h: index, %row0: index) workgroup(%kb : !k, %db : !ds) kernel attributes {fa.tile = #fa.tile<wgmma = true>, known_block_size = array<i32: 128, 1, 1>} {
    %zero = arith.constant dense<0.0> : vector<64x32xf32>
    %dq = fa.tile_matmul %kb, %db, %zero transpose_a : !k, !ds, vector<64x32xf32>
    fa.store_tile %dq, %o[%b, %h, %row0] : vector<64x32xf32>, !o
    gpu.return
  }
}
