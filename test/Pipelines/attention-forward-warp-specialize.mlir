// RUN: fa-opt %s --split-input-file --verify-diagnostics --fa-expand-attention-variants --fa-tile-attention --fa-fuse-online-softmax --fa-eliminate-causal-tiles --fa-overlap-softmax --fa-pipeline-kv-copies --fa-warp-specialize --cse | FileCheck %s

// warp_specialize = true: the K and V tiles come through two TMA rings over
// the pipelined kernel's [2][128][128] buffers. A producer warpgroup (threads
// 256 to 383) gives up registers and one of its threads walks every key
// tile; the two computing warpgroups take registers, copy and wait for Q
// alone, then consume tile j where they read slot j % 2 and release it (one
// arrival per warp) after the product reading it was waited for.
// CHECK: block = [384, 1, 1]
// CHECK-SAME: #fa.param<"k_tma" : !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>>
// CHECK-SAME: #fa.param<"v_tma" : !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>>
// CHECK-LABEL: gpu.func @attn
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x?x?x128xbf16>, %[[K:[^:]*]]: memref<?x?x?x128xbf16>, %{{[^:]*}}: memref<?x?x?x128xbf16>, %{{[^:]*}}: memref<?x?x?x128xbf16>, %[[KMAP:[^:]*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[VMAP:[^:]*]]: !nvgpu.tensormap.descriptor<{{.*}}>)
// CHECK-SAME: workgroup(%[[KB:[^ ]+]] : memref<2x128x128xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64}, %[[VB:[^ ]+]] : memref<2x128x128xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64}, %[[QB:[^ ]+]] : memref<128x128xbf16
// CHECK-SAME: fa.producer_threads = 128 : i64
// CHECK-SAME: known_block_size = array<i32: 384, 1, 1>
// CHECK: %[[SEQ:.*]] = memref.dim %[[K]], %c2
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[SEQ]], %c128
// CHECK: %[[KRING:.*]] = fa.ring_create %[[KB]] consumers(8)
// CHECK: %[[VRING:.*]] = fa.ring_create %[[VB]] consumers(8)
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[PRODUCER:.*]] = arith.cmpi uge, %[[TID]], %c256
// CHECK: scf.if %[[PRODUCER]] {
// CHECK-NEXT: nvvm.setmaxregister decrease 24
// CHECK: arith.cmpi eq, %{{.*}}, %c256
// CHECK: scf.for %[[J:.*]] = %c0 to %[[TILES]] step %c1 {
// CHECK-NEXT: %[[ROW:.*]] = arith.muli %[[J]], %c128
// CHECK-NEXT: fa.ring_produce %[[KRING]][%[[J]]] from %[[KMAP]][%{{.*}}, %{{.*}}, %[[ROW]], %c0]
// CHECK-NEXT: fa.ring_produce %[[VRING]][%[[J]]] from %[[VMAP]][%{{.*}}, %{{.*}}, %[[ROW]], %c0]
// CHECK-NEXT: }
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK-NEXT: fa.copy_tile_async %[[Q]]{{.*}} into %[[QB]]
// CHECK-NEXT: fa.wait_tiles
// CHECK-NOT: fa.copy_tile_async
// CHECK-NOT: fa.wait_tiles
// The first tile: its scores are waited for at their row maxima.
// CHECK: %[[K0:.*]] = fa.ring_consume %[[KRING]][%c0]
// CHECK-NEXT: fa.tile_matmul %[[QB]], %[[K0]]
// CHECK-NEXT: vector.multi_reduction <maxnumf>
// CHECK: fa.ring_release %[[KRING]][%c0]
// The loop: K[j] for the scores, V[j - 1] for the previous tile's P @ V,
// released after the rescale that waits for it.
// CHECK: scf.for %[[I:[^ ]*]] =
// CHECK: fa.ring_consume %[[KRING]][%[[I]]]
// CHECK: %[[PREV:.*]] = arith.subi %[[I]], %c1
// CHECK: fa.ring_consume %[[VRING]][%[[PREV]]]
// CHECK: fa.ring_release %[[KRING]][%[[I]]]
// CHECK: fa.ring_release %[[VRING]][%[[PREV]]]
// CHECK: scf.yield
// The last P @ V leaves its scf.if: released after it, under its condition.
// CHECK: = scf.if %[[ANY:[^ ]*]] -> (vector<128x128xf32>)
// CHECK: fa.ring_consume %[[VRING]]
// CHECK: scf.if %[[ANY]] {
// CHECK-NEXT: %[[LASTTILE:.*]] = arith.subi
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: fa.ring_release %[[VRING]][%[[LASTTILE]]]
// CHECK: } {fa.warp_roles}
func.func @attn(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>,
                %o: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true, warp_specialize = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
               outs(%o : memref<?x?x?x128xbf16>)
  return
}

// -----

// Causal: the producer stops where the last (partial) key loop does, at the
// query tile's diagonal: min(ceil(seq_kv / 128), ceil((row0 + 128) / 128)).
// CHECK-LABEL: gpu.func @causal
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: %[[LAST_ROW:.*]] = arith.addi %{{.*}}, %c128
// CHECK-NEXT: %[[DIAGONAL:.*]] = arith.ceildivui %[[LAST_ROW]], %c128
// CHECK-NEXT: %[[END:.*]] = arith.minui %{{.*}}, %[[DIAGONAL]]
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %[[END]] step %c1 {
// CHECK: } else {
// CHECK: fa.kv_tiles = "full"
// CHECK: scf.for {{.*}} to %[[CONSUMER_END:[^ ]*]] step
// CHECK: fa.kv_tiles = "partial"
func.func @causal(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                  %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true, warp_specialize = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) causal
  return
}

// -----

// ping_pong = true: warpgroup 1 hands warpgroup 0 the first turn; in each
// key loop a warpgroup waits for its turn (bar.sync 2 + w, 256 threads)
// before its first product and hands the turn over (bar.arrive 3 - w...)
// after its last.
// CHECK-LABEL: gpu.func @ping_pong
// CHECK: nvvm.setmaxregister increase 240
// CHECK: %[[WG:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[SECOND:.*]] = arith.cmpi eq, %[[WG]], %c1_i32
// CHECK: scf.if %[[SECOND]] {
// CHECK: nvvm.barrier.arrive id = %c2_i32 number_of_threads = %c256_i32
// CHECK: fa.copy_tile_async
// CHECK: scf.for
// CHECK: %[[MINE:.*]] = arith.addi %c2_i32, %[[WG]]
// CHECK-NEXT: nvvm.barrier id = %[[MINE]] number_of_threads = %c256_i32
// CHECK-NEXT: fa.tile_matmul
// CHECK: fa.tile_matmul
// CHECK: %[[OTHER:.*]] = arith.subi %c5_i32, %[[MINE]]
// CHECK-NEXT: nvvm.barrier.arrive id = %[[OTHER]] number_of_threads = %c256_i32
// CHECK: fa.kv_tiles = "full"
func.func @ping_pong(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>,
                     %o: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
               outs(%o : memref<?x?x?x128xbf16>)
  return
}

// -----

// persistent = true: a block per resident slot (grid persistent_query_tiles)
// walks tiles of the old grid [query_tiles, batch_heads]. Causal tiles are
// numbered in groups of R = ceil(2 grid / query_tiles) (batch, head) rows,
// by query tile first within a group (reversed as before: the heaviest
// first), and taken dynamically: the
// producer's thread starts at block_id.x and, at the start of each tile,
// asks the tile counter (a new parameter, tile_counter) for the next one
// (grid_dim.x + the counter's old value). Before loading its k-th query
// tile by TMA (q_tma) into a ring of one slot over a buffer of its own, it
// publishes that next tile, k + 1, in the workgroup's tile slot
// (k + 1) % 2, which the computing warpgroups read right after that query
// tile arrived: they start at block_id.x too, know each next tile before
// they wait for its query tile, stop at a tile past the end, and release
// the query slot before storing their output. Both roles number the K/V
// rings' tiles on from the key tiles of their earlier query tiles (base +
// j), so slots and phases stay matched. The producer's index math takes 32
// registers, which leave the computing warpgroups 232 each of the block's
// 168 per thread. They give the first turn once, before the loop.
// CHECK: persistent = #fa.kernel<{{.*}}persistent = true>, block = [384, 1, 1], grid = [persistent_query_tiles, one, one]
// CHECK-SAME: #fa.param<"k_tma" {{.*}} #fa.param<"v_tma" {{.*}} #fa.param<"q_tma" : !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>>, #fa.param<"tile_counter" : memref<1xi32>>]
// CHECK-LABEL: gpu.func @persistent
// CHECK-SAME: %[[QMAP:[^:]*]]: !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>, %[[COUNTER:[^:]*]]: memref<1xi32>) workgroup(
// CHECK-SAME: %[[QSLOTS:[^ ]+]] : memref<1x128x128xbf16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64}, %[[IDS:[^ ]+]] : memref<2xi32, #gpu.address_space<workgroup>>)
// CHECK: %[[SEQ:.*]] = memref.dim %arg0, %c2
// CHECK-NEXT: %[[QT:.*]] = arith.ceildivui %[[SEQ]], %c128
// CHECK-NOT: gpu.block_id y
// CHECK: %[[BATCH:.*]] = memref.dim %arg0, %c0
// CHECK-NEXT: %[[BH:.*]] = arith.muli %[[BATCH]], %{{.*}}
// CHECK-NEXT: %[[TILES:.*]] = arith.muli %[[QT]], %[[BH]]
// CHECK-NEXT: %[[QRING:.*]] = fa.ring_create %[[QSLOTS]] consumers(8)
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK-NEXT: scf.while (%[[T:.*]] = %[[BX]], %[[K:.*]] = %c0, %[[BASE:.*]] = %c0) : (index, index, index) -> (index, index, index) {
// CHECK-NEXT: %[[MORE:.*]] = arith.cmpi ult, %[[T]], %[[TILES]]
// CHECK-NEXT: scf.condition(%[[MORE]]) %[[T]], %[[K]], %[[BASE]]
// CHECK-NEXT: } do {
// CHECK-NEXT: ^bb0(%[[T:.*]]: index, %[[K:.*]]: index, %[[BASE:.*]]: index):
// CHECK-NEXT: %[[GRID:.*]] = gpu.grid_dim x
// CHECK-NEXT: %[[TWO_WAVES:.*]] = arith.muli %[[GRID]], %c2
// CHECK-NEXT: %[[ROWS:.*]] = arith.ceildivui %[[TWO_WAVES]], %[[QT]]
// CHECK-NEXT: %[[GROUP_TILES:.*]] = arith.muli %[[ROWS]], %[[QT]]
// CHECK-NEXT: %[[GROUP:.*]] = arith.divui %[[T]], %[[GROUP_TILES]]
// CHECK-NEXT: %[[FIRST_ROW:.*]] = arith.muli %[[GROUP]], %[[ROWS]]
// CHECK-NEXT: %[[WITHIN:.*]] = arith.remui %[[T]], %[[GROUP_TILES]]
// CHECK-NEXT: %[[LEFT:.*]] = arith.subi %[[BH]], %[[FIRST_ROW]]
// CHECK-NEXT: %[[GROUP_ROWS:.*]] = arith.minui %[[ROWS]], %[[LEFT]]
// CHECK-NEXT: %[[QTILE:.*]] = arith.divui %[[WITHIN]], %[[GROUP_ROWS]]
// CHECK-NEXT: %[[IN_GROUP:.*]] = arith.remui %[[WITHIN]], %[[GROUP_ROWS]]
// CHECK-NEXT: %[[ROW:.*]] = arith.addi %[[FIRST_ROW]], %[[IN_GROUP]]
// CHECK-NEXT: %[[FROM_END:.*]] = arith.subi %[[QT]], %[[QTILE]]
// CHECK-NEXT: %[[REVERSED:.*]] = arith.subi %[[FROM_END]], %c1
// CHECK-NEXT: %[[B:.*]] = arith.divui %[[ROW]], %{{.*}}
// CHECK-NEXT: %[[H:.*]] = arith.remui %[[ROW]], %{{.*}}
// CHECK: %[[ROW0:.*]] = arith.muli %[[REVERSED]], %c128
// CHECK: %[[END:.*]] = arith.minui
// CHECK: %[[TAKEN:.*]] = memref.atomic_rmw addi %c1_i32, %[[COUNTER]][%c0]
// CHECK-NEXT: %[[TAKEN_INDEX:.*]] = arith.index_castui %[[TAKEN]]
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[GRID]], %[[TAKEN_INDEX]]
// CHECK-NEXT: %[[NEXT_K:.*]] = arith.addi %[[K]], %c1
// CHECK-NEXT: %[[SLOT:.*]] = arith.remui %[[NEXT_K]], %c2
// CHECK-NEXT: %[[NEXT32:.*]] = arith.index_castui %[[NEXT]] : index to i32
// CHECK-NEXT: memref.store %[[NEXT32]], %[[IDS]][%[[SLOT]]]
// CHECK-NEXT: fa.ring_produce %[[QRING]][%[[K]]] from %[[QMAP]][%[[B]], %[[H]], %[[ROW0]], %c0]
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %[[END]] step %c1 {
// CHECK: %[[AT:.*]] = arith.addi %[[BASE]], %[[J]]
// CHECK-NEXT: fa.ring_produce %{{.*}}[%[[AT]]]
// CHECK-NEXT: fa.ring_produce %{{.*}}[%[[AT]]]
// CHECK: %[[NEXT_BASE:.*]] = arith.addi %[[BASE]], %[[END]]
// CHECK-NEXT: scf.yield %[[NEXT]], %[[NEXT_K]], %[[NEXT_BASE]] : index, index, index
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK: } else {
// CHECK-NEXT: nvvm.setmaxregister increase 232
// CHECK: nvvm.barrier.arrive id = %c2_i32
// CHECK: %[[CBX:.*]] = gpu.block_id x
// CHECK-NEXT: scf.while (%[[CT:.*]] = %[[CBX]], %[[CK:.*]] = %c0, %[[CBASE:.*]] = %c0) : (index, index, index) -> (index, index, index) {
// CHECK-NEXT: %[[CMORE:.*]] = arith.cmpi ult, %[[CT]], %[[TILES]]
// CHECK-NEXT: scf.condition(%[[CMORE]]) %[[CT]], %[[CK]], %[[CBASE]]
// CHECK-NEXT: } do {
// CHECK-NEXT: ^bb0(%[[CT:.*]]: index, %[[CK:.*]]: index, %[[CBASE:.*]]: index):
// CHECK-NOT: nvvm.barrier.arrive id = %c2_i32
// CHECK-NOT: fa.copy_tile_async
// CHECK-NOT: gpu.block_id
// CHECK: %[[Q:.*]] = fa.ring_consume %[[QRING]][%[[CK]]]
// CHECK-NEXT: %[[CNEXT_K:.*]] = arith.addi %[[CK]], %c1
// CHECK-NEXT: %[[CSLOT:.*]] = arith.remui %[[CNEXT_K]], %c2
// CHECK-NEXT: %[[PUBLISHED:.*]] = memref.load %[[IDS]][%[[CSLOT]]]
// CHECK-NEXT: %[[CNEXT:.*]] = arith.index_castui %[[PUBLISHED]] : i32 to index
// CHECK-NOT: fa.wait_tiles
// CHECK: %[[FIRST:.*]] = arith.addi %[[CBASE]], %c0
// CHECK-NEXT: %[[K0:.*]] = fa.ring_consume %{{.*}}[%[[FIRST]]]
// CHECK-NEXT: fa.tile_matmul %[[Q]], %[[K0]]
// CHECK: fa.ring_release %[[QRING]][%[[CK]]]
// CHECK-NEXT: }
// CHECK-NEXT: fa.store_tile
// CHECK-NEXT: %[[CNEXT_BASE:.*]] = arith.addi %[[CBASE]], %{{.*}}
// CHECK-NEXT: scf.yield %[[CNEXT]], %[[CNEXT_K]], %[[CNEXT_BASE]] : index, index, index
// CHECK: } {fa.warp_roles}
func.func @persistent(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>,
                      %o: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true, persistent = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
               outs(%o : memref<?x?x?x128xbf16>) causal
  return
}

// -----

// Without the mask every query tile weighs the same: the static walk
// t = block_id.x, + grid_dim.x, ..., no tile counter.
// CHECK-NOT: tile_counter
// CHECK-LABEL: gpu.func @persistent_plain
// CHECK-NOT: memref<1xi32>
// CHECK: %[[SEQ:.*]] = memref.dim %arg0, %c2
// CHECK-NEXT: %[[QT:.*]] = arith.ceildivui %[[SEQ]], %c128
// CHECK: %[[TILES:.*]] = arith.muli %[[QT]], %{{.*}}
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[TILES]] step
// CHECK-NEXT: arith.subi %[[T]]
// CHECK-NEXT: arith.divui
// CHECK-NEXT: %[[QTILE:.*]] = arith.remui %[[T]], %[[QT]]
// CHECK-NEXT: %[[ROW:.*]] = arith.divui %[[T]], %[[QT]]
// CHECK-NOT: arith.select
// CHECK-NEXT: arith.divui %[[ROW]], %{{.*}}
// CHECK: } else {
// CHECK: scf.for %[[CT:.*]] = %{{.*}} to %[[TILES]] step
// CHECK-NEXT: arith.subi %[[CT]]
// CHECK-NEXT: arith.divui
// CHECK-NEXT: %[[CQTILE:.*]] = arith.remui %[[CT]], %[[QT]]
// CHECK-NEXT: arith.divui %[[CT]], %[[QT]]
// CHECK: arith.muli %[[CQTILE]], %c128
func.func @persistent_plain(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>,
                            %o: memref<?x?x?x128xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true, persistent = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>)
               outs(%o : memref<?x?x?x128xbf16>)
  return
}

// -----

// A region mask (here the window variant's) may skip key tiles before the
// diagonal, which the producer does not know yet.
// expected-error @+1 {{fa-warp-specialize: warp_specialize = true needs a forward without mask or score regions}}
func.func @window(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                  %o: memref<?x?x?x64xbf16>, %left: index, %right: index) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true, warp_specialize = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>) causal window(%left, %right)
  return
}

// -----

// expected-error @+1 {{fa-warp-specialize: warp_specialize = true needs wgmma = true: the producer feeds warpgroup MMAs}}
func.func @mma_sync(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                    %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 64, num_warps = 4, num_stages = 2, q_in_shared = true, warp_specialize = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}

// -----

// expected-error @+1 {{fa-warp-specialize: warp_specialize = true needs overlap_softmax = true}}
func.func @no_overlap(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                      %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 128, block_n = 128, num_warps = 8, num_stages = 2, q_in_shared = true, wgmma = true, warp_specialize = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}

// -----

// Ping-pong alternates two computing warpgroups; four warps make one.
// expected-error @+1 {{fa-warp-specialize: warp_specialize = true needs num_warps = 8 with ping_pong = true}}
func.func @four_warps(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>, %v: memref<?x?x?x64xbf16>,
                      %o: memref<?x?x?x64xbf16>) attributes {fa.tile = #fa.tile<block_m = 64, block_n = 128, num_warps = 4, num_stages = 2, q_in_shared = true, wgmma = true, overlap_softmax = true, warp_specialize = true, ping_pong = true>} {
  fa.attention ins(%q, %k, %v : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>)
               outs(%o : memref<?x?x?x64xbf16>)
  return
}
