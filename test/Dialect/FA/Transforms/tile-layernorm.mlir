// RUN: fa-opt %s --fa-tile-layernorm --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not fa-opt %s --fa-tile-layernorm --split-input-file 2>&1 | FileCheck %s --check-prefix=DEFAULTS
// RUN: fa-opt %s --fa-tile-layernorm="rows=2 block-cols=512 num-warps=2 resident=1" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=OPTIONS
// RUN: not fa-opt %s --split-input-file --fa-tile-layernorm="block-cols=1048576 resident=1" 2>&1 | FileCheck %s --check-prefix=COLS-OPTION

// Forward, whole rows in registers: one read of x, the mean, the variance
// from the centred values (padding columns zeroed), then y and the stats.
// eps is the kernel's last parameter (an f32 the runtime passes), not a
// constant: the manifest lists it among the params and has no eps entry.
// CHECK-LABEL: module attributes {fa.kernels = {ln_resident = #fa.kernel<op = layernorm_fwd, dtype = bf16, config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>, block = [128, 1, 1], grid = [row_tiles, one, one], params = [#fa.param<"x" : memref<?x?xbf16>>, #fa.param<"weight" : memref<?xbf16>>, #fa.param<"bias" : memref<?xbf16>>, #fa.param<"y" : memref<?x?xbf16>>, #fa.param<"mean" : memref<?xf32>>, #fa.param<"rstd" : memref<?xf32>>, #fa.param<"eps" : f32>]>}, gpu.container_module}
// CHECK-NOT: func.func
// CHECK: gpu.module @ln_resident
// CHECK: gpu.func @ln_resident(%[[X:.*]]: memref<?x?xbf16>, %[[W:.*]]: memref<?xbf16>, %[[B:.*]]: memref<?xbf16>, %[[Y:.*]]: memref<?x?xbf16>, %[[MEAN:.*]]: memref<?xf32>, %[[RSTD:.*]]: memref<?xf32>, %[[EPS:.*]]: f32) kernel attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>, known_block_size = array<i32: 128, 1, 1>}
// CHECK: %[[COLS:.*]] = memref.dim %[[X]], %c1
// CHECK: %[[ROW0:.*]] = arith.muli %{{.*}}, %c1
// CHECK-NOT: scf.for
// Every load comes before the reductions (whose barriers would hold back
// the weight and bias loads).
// CHECK: %[[XB:.*]] = fa.load_block %[[X]][%[[ROW0]], %{{.*}}] : memref<?x?xbf16> -> vector<1x1024xbf16>
// CHECK: %[[XF:.*]] = arith.extf %[[XB]]
// CHECK: fa.load_block %[[W]]
// CHECK: fa.load_block %[[B]]
// CHECK: %[[SUM:.*]] = vector.multi_reduction <add>, %[[XF]], %{{.*}} [1] : vector<1x1024xf32> to vector<1xf32>
// CHECK: %[[M:.*]] = arith.divf %[[SUM]]
// CHECK: %[[MB:.*]] = fa.row_broadcast %[[M]] : vector<1xf32> -> vector<1x1024xf32>
// CHECK: %[[D:.*]] = arith.subf %[[XF]], %[[MB]]
// CHECK: %[[DZ:.*]] = fa.zero_columns %[[D]] cols(%{{.*}}) limit(%[[COLS]])
// CHECK: %[[SQ:.*]] = arith.mulf %[[DZ]], %[[DZ]]
// CHECK: vector.multi_reduction <add>, %[[SQ]]
// CHECK: %[[VAR:.*]] = arith.divf
// CHECK: %[[EPSROWS:.*]] = vector.broadcast %[[EPS]] : f32 to vector<1xf32>
// CHECK: %[[VAREPS:.*]] = arith.addf %[[VAR]], %[[EPSROWS]]
// CHECK: %[[R:.*]] = math.rsqrt %[[VAREPS]]
// CHECK: fa.store_block %{{.*}}, %[[Y]][%[[ROW0]], %{{.*}}] : vector<1x1024xbf16>, memref<?x?xbf16>
// CHECK: fa.store_block %[[M]], %[[MEAN]][%[[ROW0]]] : vector<1xf32>, memref<?xf32>
// CHECK: fa.store_block %[[R]], %[[RSTD]][%[[ROW0]]] : vector<1xf32>, memref<?xf32>
// OPTIONS: config = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>,
func.func @ln_resident(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) stats(%mean, %rstd : memref<?xf32>, memref<?xf32>) eps(%eps : f32)
  return
}

// -----

// Persistent: block i takes row blocks i, i + grid, ...; the weight and bias
// load once, and each iteration loads the next row block's x (carried raw)
// before working on the current one.
// CHECK-LABEL: module attributes {fa.kernels = {ln_persistent = #fa.kernel<{{.*}}config = #fa.rows<rows = 2, block_cols = 1024, num_warps = 4, resident = true, persistent = true>, block = [128, 1, 1], grid = [persistent_row_tiles, one, one]
// CHECK: gpu.func @ln_persistent(%[[X:[^:]*]]: memref<?x?xf16>{{.*}}, %[[EPS:[^:]*]]: f32)
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: fa.load_block %arg1
// CHECK: fa.load_block %arg2
// CHECK: %[[GRID:.*]] = gpu.grid_dim x
// CHECK: %[[N:.*]] = arith.ceildivui %{{.*}}, %c2
// CHECK: %[[FIRST:.*]] = fa.load_block %[[X]]
// CHECK: scf.for %[[T:.*]] = %[[BID]] to %[[N]] step %[[GRID]] iter_args(%[[CUR:.*]] = %[[FIRST]]) -> (vector<2x1024xf16>)
// CHECK:   %[[NEXTBLK:.*]] = arith.addi %[[T]], %[[GRID]]
// CHECK:   %[[NEXTROW:.*]] = arith.muli %[[NEXTBLK]], %c2
// CHECK:   %[[NEXT:.*]] = fa.load_block %[[X]][%[[NEXTROW]], %{{.*}}]
// CHECK:   arith.extf %[[CUR]]
// CHECK:   vector.multi_reduction
// CHECK:   vector.broadcast %[[EPS]] : f32 to vector<2xf32>
// CHECK:   math.rsqrt
// CHECK:   fa.store_block
// CHECK:   scf.yield %[[NEXT]]
func.func @ln_persistent(%x: memref<?x?xf16>, %w: memref<?xf16>, %b: memref<?xf16>, %y: memref<?x?xf16>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 2, block_cols = 1024, num_warps = 4, resident = true, persistent = true>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xf16>, memref<?xf16>, memref<?xf16>) outs(%y : memref<?x?xf16>) eps(%eps : f32)
  return
}

// -----

// expected-error @+1 {{fa-tile-layernorm: persistent needs resident (the next rows are prefetched into registers)}}
func.func @persistent_looped(%x: memref<?x?xf16>, %w: memref<?xf16>, %b: memref<?xf16>, %y: memref<?x?xf16>, %eps: f32) attributes {fa.rows = #fa.rows<persistent = true, resident = false>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xf16>, memref<?xf16>, memref<?xf16>) outs(%y : memref<?x?xf16>) eps(%eps : f32)
  return
}

// -----

// Rows of any length: three loops over column blocks (sum, squares, output);
// the pass options apply where the function has no fa.rows. Without stats
// nothing but y is written.
// CHECK-LABEL: gpu.func @ln_looped
// CHECK-SAME: %[[EPS:[^:]*]]: f32)
// CHECK-SAME: fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>
// CHECK: %[[COLS:.*]] = memref.dim %{{.*}}, %c1
// CHECK: %[[SUM:.*]] = scf.for %[[C:.*]] = %{{.*}} to %[[COLS]] step %c1024{{.*}} iter_args
// CHECK:   fa.load_block %{{.*}}[%{{.*}}, %[[C]]]
// CHECK:   vector.multi_reduction <add>
// CHECK: scf.for %[[C2:.*]] = %{{.*}} to %[[COLS]] step %c1024{{.*}} iter_args
// CHECK:   fa.zero_columns %{{.*}} cols(%[[C2]]) limit(%[[COLS]])
// CHECK: vector.broadcast %[[EPS]] : f32 to vector<1xf32>
// CHECK: math.rsqrt
// CHECK: scf.for %[[C3:.*]] = %{{.*}} to %[[COLS]] step %c1024
// CHECK:   fa.store_block %{{.*}}[%{{.*}}, %[[C3]]] : vector<1x1024xf32>, memref<?x?xf32>
// CHECK-NOT: fa.store_block
// CHECK: gpu.return
// OPTIONS-LABEL: gpu.func @ln_looped
// OPTIONS-SAME: fa.rows = #fa.rows<rows = 2, block_cols = 512, num_warps = 2, resident = true>, known_block_size = array<i32: 64, 1, 1>
// OPTIONS: fa.load_block %{{.*}} -> vector<2x512xf32>
func.func @ln_looped(%x: memref<?x?xf32>, %w: memref<?xf32>, %b: memref<?xf32>, %y: memref<?x?xf32>, %eps: f32) {
  fa.layernorm ins(%x, %w, %b : memref<?x?xf32>, memref<?xf32>, memref<?xf32>) outs(%y : memref<?x?xf32>) eps(%eps : f32)
  return
}

// -----

// Backward, resident: a persistent loop over row blocks (block id to the
// number of blocks, step the grid) keeps the parameter-gradient sums in
// registers and writes them once to this block's partial rows; a second
// kernel sums the partial rows per column.
// CHECK-LABEL: module attributes {fa.kernels = {lnb = #fa.kernel<op = layernorm_bwd, {{.*}}grid = [persistent_row_tiles, one, one], params = [#fa.param<"x" : {{.*}}>, #fa.param<"weight" : {{.*}}>, #fa.param<"mean" : {{.*}}>, #fa.param<"rstd" : {{.*}}>, #fa.param<"dy" : {{.*}}>, #fa.param<"dx" : {{.*}}>, #fa.param<"partial_dweight" : {{.*}}>, #fa.param<"partial_dbias" : memref<?x?xf32>>], params_kernel = "lnb_params">, lnb_params = #fa.kernel<op = layernorm_bwd_params, dtype = bf16, config = #fa.rows<rows = 64, block_cols = 32, num_warps = 8>, block = [256, 1, 1], grid = [column_tiles, one, one], params = [#fa.param<"partial_dweight" : {{.*}}>, #fa.param<"partial_dbias" : {{.*}}>, #fa.param<"dweight" : {{.*}}>, #fa.param<"dbias" : memref<?xf32>>]>}
// CHECK: gpu.func @lnb(%[[X:.*]]: memref<?x?xbf16>, %[[W:.*]]: memref<?xbf16>, %[[MEAN:.*]]: memref<?xf32>, %[[RSTD:.*]]: memref<?xf32>, %[[DY:.*]]: memref<?x?xbf16>, %[[DX:.*]]: memref<?x?xbf16>, %[[PW:.*]]: memref<?x?xf32>, %[[PB:.*]]: memref<?x?xf32>)
// CHECK: %[[ROWS:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[PROW:.*]] = arith.muli %{{.*}}, %c1
// CHECK: %[[NBLK:.*]] = arith.ceildivui %[[ROWS]]
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: %[[GRID:.*]] = gpu.grid_dim x
// CHECK: fa.load_block %[[W]]
// CHECK: %[[ACC:.*]]:2 = scf.for %[[T:.*]] = %[[BID]] to %[[NBLK]] step %[[GRID]] iter_args(%[[DW:.*]] = %{{.*}}, %[[DB:.*]] = %{{.*}}) -> (vector<1x1024xf32>, vector<1x1024xf32>)
// CHECK:   fa.load_block %[[MEAN]]
// CHECK:   fa.load_block %[[RSTD]]
// CHECK:   fa.load_block %[[DY]]
// CHECK:   fa.load_block %[[X]]
// CHECK:   vector.multi_reduction <add>, {{.*}} [1]
// CHECK:   vector.multi_reduction <add>, {{.*}} [1]
// CHECK:   fa.store_block %{{.*}}, %[[DX]]
// CHECK:   scf.yield
// CHECK: fa.store_block %[[ACC]]#0, %[[PW]][%[[PROW]], %{{.*}}]
// CHECK: fa.store_block %[[ACC]]#1, %[[PB]][%[[PROW]], %{{.*}}]
// CHECK: gpu.module @lnb_params
// CHECK: gpu.func @lnb_params(%[[PW2:.*]]: memref<?x?xf32>, %[[PB2:.*]]: memref<?x?xf32>, %[[DWO:.*]]: memref<?xf32>, %[[DBO:.*]]: memref<?xf32>)
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[COL0:.*]] = arith.muli %{{.*}}, %c32
// CHECK: %[[P:.*]]:2 = scf.for {{.*}} step %c64 iter_args
// CHECK:   fa.load_block %[[PW2]]{{.*}} -> vector<64x32xf32>
// CHECK: %[[SW:.*]] = vector.multi_reduction <add>, %[[P]]#0, %{{.*}} [0] : vector<64x32xf32> to vector<32xf32>
// CHECK: fa.store_block %[[SW]], %[[DWO]][%[[COL0]]]
func.func @lnb(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xbf16>, %dx: memref<?x?xbf16>, %dw: memref<?xf32>, %db: memref<?xf32>) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xbf16>, memref<?xbf16>, memref<?xf32>, memref<?xf32>, memref<?x?xbf16>) outs(%dx, %dw, %db : memref<?x?xbf16>, memref<?xf32>, memref<?xf32>)
  return
}

// -----

// Backward for rows of any length: the partial rows start at zero and each
// column block adds into them.
// CHECK-LABEL: gpu.func @lnb_looped
// CHECK: scf.for
// CHECK:   fa.store_block %cst{{.*}}, %arg6
// CHECK:   fa.store_block %cst{{.*}}, %arg7
// CHECK: scf.for {{.*}} step %grid_dim_x
// CHECK:   scf.for {{.*}} iter_args
// CHECK:   scf.for
// CHECK:     fa.store_block %{{.*}}, %arg5
// CHECK:     %[[OLD:.*]] = fa.load_block %arg6
// CHECK:     %[[NEW:.*]] = arith.addf %[[OLD]]
// CHECK:     fa.store_block %[[NEW]], %arg6
// CHECK: gpu.func @lnb_looped_params
// The parameter gradients in the weight's element type.
// CHECK: arith.truncf %{{.*}} : vector<32xf32> to vector<32xf16>
func.func @lnb_looped(%x: memref<?x?xf16>, %w: memref<?xf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xf16>, %dx: memref<?x?xf16>, %dw: memref<?xf16>, %db: memref<?xf16>) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = false>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xf16>, memref<?xf16>, memref<?xf32>, memref<?xf32>, memref<?x?xf16>) outs(%dx, %dw, %db : memref<?x?xf16>, memref<?xf16>, memref<?xf16>)
  return
}

// -----

func.func @rank3(%x: memref<?x?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?x?xbf16>, %eps: f32) {
  // expected-error @+1 {{fa-tile-layernorm expects x of rank 2 (rows x cols), got rank 3; collapse the leading dimensions first}}
  fa.layernorm ins(%x, %w, %b : memref<?x?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?x?xbf16>) eps(%eps : f32)
  return
}

// -----

// The full messages under the default options (128 threads, one row).
// DEFAULTS: block_cols (1000) must be a multiple of 1024 (8 columns for each of the 128 threads of a row)
// DEFAULTS: rows (3) must divide the 128 threads into a power-of-two number of threads per row
// expected-error @+1 {{fa-tile-layernorm: block_cols (1000) must be a multiple of}}
func.func @cols_not_multiple(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %eps: f32) attributes {fa.rows = #fa.rows<block_cols = 1000>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) eps(%eps : f32)
  return
}

// -----

// expected-error @+1 {{fa-tile-layernorm: rows (3) must divide the}}
func.func @rows_not_dividing(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %eps: f32) attributes {fa.rows = #fa.rows<rows = 3>} {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) eps(%eps : f32)
  return
}

// -----

// expected-error @+1 {{fa-tile-layernorm: the reduction kernel needs at most 32 threads per row (reduce_rows >= 8)}}
func.func @reduce_rows_too_few(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %mean: memref<?xf32>, %rstd: memref<?xf32>, %dy: memref<?x?xbf16>, %dx: memref<?x?xbf16>, %dw: memref<?xf32>, %db: memref<?xf32>) attributes {fa.rows = #fa.rows<reduce_rows = 4, reduce_cols = 512>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : memref<?x?xbf16>, memref<?xbf16>, memref<?xf32>, memref<?xf32>, memref<?x?xbf16>) outs(%dx, %dw, %db : memref<?x?xbf16>, memref<?xf32>, memref<?xf32>)
  return
}

// -----

// expected-error @+1 {{argument #4 is not used by the layernorm op}}
func.func @unused_argument(%x: memref<?x?xbf16>, %w: memref<?xbf16>, %b: memref<?xbf16>, %y: memref<?x?xbf16>, %extra: memref<?xf32>, %eps: f32) {
  fa.layernorm ins(%x, %w, %b : memref<?x?xbf16>, memref<?xbf16>, memref<?xbf16>) outs(%y : memref<?x?xbf16>) eps(%eps : f32)
  return
}

// -----

// Limits. The block-cols option is checked like the entry (the functions
// without fa.rows take it):
// COLS-OPTION: error: fa-tile-layernorm: block_cols (1048576) gives each of the 128 threads of a row 8192 values to hold, more than 64 (use more warps, or a shorter block_cols with resident = false)

!x = memref<?x?xbf16>
!c = memref<?xbf16>
!r = memref<?xf32>
// 2^59 + 1 warps made 32 threads once multiplied by 32.
// expected-error @+1 {{num_warps must be from 1 to 32, got 576460752303423489}}
func.func @ln_overflowing_warps(%x: !x, %w: !c, %b: !c, %y: !x, %eps: f32) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 256, num_warps = 576460752303423489, resident = true>} {
  fa.layernorm ins(%x, %w, %b : !x, !c, !c) outs(%y : !x) eps(%eps : f32)
  return
}

// -----

!x = memref<?x?xbf16>
!c = memref<?xbf16>
!r = memref<?xf32>
// expected-error @+1 {{reduce_warps must be from 1 to 32, got 64}}
func.func @ln_grad_reduce_warps(%x: !x, %w: !c, %mean: !r, %rstd: !r, %dy: !x, %dx: !x, %dw: !r, %db: !r) attributes {fa.rows = #fa.rows<rows = 1, block_cols = 1024, num_warps = 4, resident = true, reduce_warps = 64>} {
  fa.layernorm_grad ins(%x, %w, %mean, %rstd, %dy : !x, !c, !r, !r, !x) outs(%dx, %dw, %db : !x, !r, !r)
  return
}
