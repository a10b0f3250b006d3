// RUN: fa-opt %s --fa-fuse-online-softmax -split-input-file -verify-diagnostics

// A phase mark that is not a string crashed the pass (found by
// scripts/fuzz_fa_opt.py); it is an error on the loop.
gpu.module @m {
  gpu.func @f() kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{fa-fuse-online-softmax: fa.softmax_phase must be "max", "sum", "accumulate" or "online", got 1 : i64}}
    scf.for %i = %c0 to %c1 step %c1 {
    } {fa.softmax_phase = 1}
    gpu.return
  }
}

// -----

// An unknown phase made fa-opt exit 1 without a message.
gpu.module @m {
  gpu.func @f() kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{fa-fuse-online-softmax: fa.softmax_phase must be "max", "sum", "accumulate" or "online", got "bogus"}}
    scf.for %i = %c0 to %c1 step %c1 {
    } {fa.softmax_phase = "bogus"}
    gpu.return
  }
}

// -----

// Unit, as a fuzzer wrote it.
gpu.module @m {
  gpu.func @f() kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{got unit}}
    scf.for %i = %c0 to %c1 step %c1 {
    } {fa.softmax_phase}
    gpu.return
  }
}
