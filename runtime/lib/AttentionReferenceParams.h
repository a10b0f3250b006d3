//===- AttentionReferenceParams.h - Shared by host and GPU code -*- C++ -*-===//
//
// The GPU reference kernel's parameters after the tensors, passed by value as
// one struct. Included by AttentionReference.cu and ReferenceGpu.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_LIB_ATTENTIONREFERENCEPARAMS_H
#define FA_RUNTIME_LIB_ATTENTIONREFERENCEPARAMS_H

#include "AttentionVariantRule.h"

struct AttentionReferenceParams {
  long long heads;
  long long kvHeads;
  long long seqQ;
  long long seqKv;
  long long headDim;
  double scale;
  /// The mask and score, with device pointers (plain: no condition).
  AttentionVariantRule rule;
};

#endif // FA_RUNTIME_LIB_ATTENTIONREFERENCEPARAMS_H
