//===- CpuGpt.cpp - The GPT model's forward and backward in fp64 ----------===//
//
// One forward and one backward function per layer op, in the manner of
// llm.c's train_gpt2.c. Every backward adds into its outputs (+=), so a
// gradient reaching a tensor along two paths (the residual stream, a tied
// wte) is summed without special cases; the caller zeroes them once.
//
//===----------------------------------------------------------------------===//

#include "fa/train/CpuGpt.h"

#include "fa/runtime/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace fa::train {
namespace {

using Buffer = std::vector<double>;

/// The sizes of one call: rows = batch * seq positions of the residual stream.
struct Dims {
  std::int64_t batch, seq, channels, heads, headDim, hidden, vocab, layers;
  /// The training forward's masks (Dropout.h); none: nothing is dropped.
  std::optional<DropoutDraw> dropout;

  Dims(const GptConfig &config, std::int64_t batch, std::int64_t seq)
      : batch(batch), seq(seq), channels(config.dModel), heads(config.heads),
        headDim(config.headDim()), hidden(config.mlpHidden()),
        vocab(config.vocab), layers(config.layers) {}
  std::int64_t rows() const { return batch * seq; }
};

/// What each of the n elements of the activation at `site` is multiplied
/// by: activationDropoutFactor (0 or 1 / (1 - p)), or 1 without dropout.
Buffer activationFactors(const Dims &dims, std::uint32_t site, std::int64_t n) {
  Buffer factors(n, 1.0);
  if (dims.dropout)
    for (std::int64_t i = 0; i < n; ++i)
      factors[i] = activationDropoutFactor(*dims.dropout, site,
                                           static_cast<std::uint64_t>(i));
  return factors;
}

/// What attention probability P[b, h, query, key] of `layer` is multiplied
/// by (Philox.h's mask), or 1 without dropout.
double attentionFactor(const Dims &dims, std::int64_t layer, std::int64_t b,
                       std::int64_t h, std::int64_t query, std::int64_t key) {
  if (!dims.dropout)
    return 1.0;
  const DropoutDraw &draw = *dims.dropout;
  const DropoutPosition position{
      static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(h),
      static_cast<std::uint32_t>(dims.heads), static_cast<std::uint32_t>(query),
      static_cast<std::uint32_t>(key)};
  return dropoutKeep(draw.seed,
                     attentionDropoutOffset(draw.step, dims.layers, layer),
                     position, draw.p)
             ? dropoutScale(draw.p)
             : 0.0;
}

/// out[i] = factors[i] * in[i].
void scaleElements(double *out, const double *in, const Buffer &factors) {
  for (std::size_t i = 0; i < factors.size(); ++i)
    out[i] = factors[i] * in[i];
}

//===-- Encoder: x[b,t] = wte[token[b,t]] + wpe[t] ---------------------------//

void encoderForward(double *out, const std::int32_t *tokens, const double *wte,
                    const double *wpe, const Dims &dims) {
  const std::int64_t c = dims.channels;
  for (std::int64_t b = 0; b < dims.batch; ++b)
    for (std::int64_t t = 0; t < dims.seq; ++t) {
      const std::int64_t row = b * dims.seq + t;
      const double *embedding = wte + tokens[row] * c;
      const double *position = wpe + t * c;
      for (std::int64_t i = 0; i < c; ++i)
        out[row * c + i] = embedding[i] + position[i];
    }
}

void encoderBackward(double *dwte, double *dwpe, const double *dout,
                     const std::int32_t *tokens, const Dims &dims) {
  const std::int64_t c = dims.channels;
  for (std::int64_t b = 0; b < dims.batch; ++b)
    for (std::int64_t t = 0; t < dims.seq; ++t) {
      const std::int64_t row = b * dims.seq + t;
      double *dembedding = dwte + tokens[row] * c;
      double *dposition = dwpe + t * c;
      for (std::int64_t i = 0; i < c; ++i) {
        dembedding[i] += dout[row * c + i];
        dposition[i] += dout[row * c + i];
      }
    }
}

//===-- LayerNorm over the last dimension, biased variance -------------------//

void layerNormForward(double *out, double *mean, double *rstd, const double *in,
                      const double *weight, const double *bias,
                      std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const double *x = in + r * cols;
    double sum = 0;
    for (std::int64_t i = 0; i < cols; ++i)
      sum += x[i];
    const double m = sum / cols;
    double squares = 0;
    for (std::int64_t i = 0; i < cols; ++i)
      squares += (x[i] - m) * (x[i] - m);
    const double s = 1.0 / std::sqrt(squares / cols + kLayerNormEps);
    for (std::int64_t i = 0; i < cols; ++i)
      out[r * cols + i] = (x[i] - m) * s * weight[i] + bias[i];
    mean[r] = m;
    rstd[r] = s;
  }
}

/// With g = dout * weight and xhat the normalised input:
///   din = rstd * (g - mean(g) - xhat * mean(g * xhat)).
void layerNormBackward(double *din, double *dweight, double *dbias,
                       const double *dout, const double *in,
                       const double *weight, const double *mean,
                       const double *rstd, std::int64_t rows,
                       std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const double *x = in + r * cols;
    const double *dy = dout + r * cols;
    auto xhat = [&](std::int64_t i) { return (x[i] - mean[r]) * rstd[r]; };
    double gMean = 0, gXhatMean = 0;
    for (std::int64_t i = 0; i < cols; ++i) {
      gMean += dy[i] * weight[i];
      gXhatMean += dy[i] * weight[i] * xhat(i);
    }
    gMean /= cols;
    gXhatMean /= cols;
    for (std::int64_t i = 0; i < cols; ++i) {
      dbias[i] += dy[i];
      dweight[i] += dy[i] * xhat(i);
      din[r * cols + i] +=
          rstd[r] * (dy[i] * weight[i] - gMean - xhat(i) * gXhatMean);
    }
  }
}

//===-- Linear: out [rows, outs] = in [rows, ins] weight^T + bias ------------//

/// `bias` may be null (the head has none).
void matmulForward(double *out, const double *in, const double *weight,
                   const double *bias, std::int64_t rows, std::int64_t ins,
                   std::int64_t outs) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < outs; ++o) {
      double sum = bias ? bias[o] : 0.0;
      for (std::int64_t i = 0; i < ins; ++i)
        sum += in[r * ins + i] * weight[o * ins + i];
      out[r * outs + o] = sum;
    }
}

/// `dbias` may be null, as `bias` in matmulForward.
void matmulBackward(double *din, double *dweight, double *dbias,
                    const double *dout, const double *in, const double *weight,
                    std::int64_t rows, std::int64_t ins, std::int64_t outs) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < outs; ++o) {
      const double dy = dout[r * outs + o];
      if (dbias)
        dbias[o] += dy;
      for (std::int64_t i = 0; i < ins; ++i) {
        din[r * ins + i] += dy * weight[o * ins + i];
        dweight[o * ins + i] += dy * in[r * ins + i];
      }
    }
}

//===-- Causal self-attention over qkv [rows, 3C] ----------------------------//

/// Where the attention ops find q, k and v of one position and head in a
/// [rows, 3C] buffer, and a head's softmax row in att [B, H, T, T].
struct AttentionIndex {
  const Dims &dims;
  std::int64_t qkvRow(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return (b * dims.seq + t) * 3 * dims.channels + h * dims.headDim;
  }
  std::int64_t q(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return qkvRow(b, t, h);
  }
  std::int64_t k(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return qkvRow(b, t, h) + dims.channels;
  }
  std::int64_t v(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return qkvRow(b, t, h) + 2 * dims.channels;
  }
  std::int64_t attRow(std::int64_t b, std::int64_t h, std::int64_t t) const {
    return ((b * dims.heads + h) * dims.seq + t) * dims.seq;
  }
  /// Offset of head h of position t in a heads-merged [rows, C] buffer.
  std::int64_t merged(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return (b * dims.seq + t) * dims.channels + h * dims.headDim;
  }
};

double dot(const double *a, const double *b, std::int64_t n) {
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i)
    sum += a[i] * b[i];
  return sum;
}

/// att keeps each query's softmax probabilities, zero past the diagonal
/// (position t sees keys 0..t only).
void attentionForward(double *out, double *att, const double *qkv,
                      const Dims &dims, std::int64_t layer) {
  const AttentionIndex index{dims};
  const std::int64_t d = dims.headDim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  for (std::int64_t b = 0; b < dims.batch; ++b)
    for (std::int64_t h = 0; h < dims.heads; ++h)
      for (std::int64_t t = 0; t < dims.seq; ++t) {
        double *probs = att + index.attRow(b, h, t);
        const double *q = qkv + index.q(b, t, h);
        double maxScore = -std::numeric_limits<double>::infinity();
        for (std::int64_t s = 0; s <= t; ++s) {
          probs[s] = dot(q, qkv + index.k(b, s, h), d) * scale;
          maxScore = std::max(maxScore, probs[s]);
        }
        double sum = 0;
        for (std::int64_t s = 0; s <= t; ++s) {
          probs[s] = std::exp(probs[s] - maxScore);
          sum += probs[s];
        }
        for (std::int64_t s = 0; s < dims.seq; ++s)
          probs[s] = s <= t ? probs[s] / sum : 0.0;
        double *y = out + index.merged(b, t, h);
        for (std::int64_t i = 0; i < d; ++i) {
          y[i] = 0;
          for (std::int64_t s = 0; s <= t; ++s)
            y[i] += probs[s] * attentionFactor(dims, layer, b, h, t, s) *
                    qkv[index.v(b, s, h) + i];
        }
      }
}

/// Through y = sum_s p_s z_s v_s (z_s the dropout factor, 1 without) and
/// p = softmax(scale * q k_s):
///   dp_s = z_s dy . v_s,  dscore_s = p_s (dp_s - sum_j p_j dp_j).
void attentionBackward(double *dqkv, const double *dout, const double *qkv,
                       const double *att, const Dims &dims,
                       std::int64_t layer) {
  const AttentionIndex index{dims};
  const std::int64_t d = dims.headDim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Buffer dprobs(dims.seq), factors(dims.seq);
  for (std::int64_t b = 0; b < dims.batch; ++b)
    for (std::int64_t h = 0; h < dims.heads; ++h)
      for (std::int64_t t = 0; t < dims.seq; ++t) {
        const double *probs = att + index.attRow(b, h, t);
        const double *dy = dout + index.merged(b, t, h);
        double expected = 0;
        for (std::int64_t s = 0; s <= t; ++s) {
          factors[s] = attentionFactor(dims, layer, b, h, t, s);
          dprobs[s] = factors[s] * dot(dy, qkv + index.v(b, s, h), d);
          expected += probs[s] * dprobs[s];
        }
        for (std::int64_t s = 0; s <= t; ++s) {
          const double dscore = probs[s] * (dprobs[s] - expected) * scale;
          for (std::int64_t i = 0; i < d; ++i) {
            dqkv[index.v(b, s, h) + i] += probs[s] * factors[s] * dy[i];
            dqkv[index.q(b, t, h) + i] += dscore * qkv[index.k(b, s, h) + i];
            dqkv[index.k(b, s, h) + i] += dscore * qkv[index.q(b, t, h) + i];
          }
        }
      }
}

//===-- GELU, tanh form: 0.5 u (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))) -----//

constexpr double kGeluScale = 0.79788456080286535588; // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

void geluForward(double *out, const double *in, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double u = in[i];
    out[i] =
        0.5 * u * (1.0 + std::tanh(kGeluScale * (u + kGeluCubic * u * u * u)));
  }
}

/// d/du = 0.5 (1 + tanh a) + 0.5 u (1 - tanh^2 a) sqrt(2/pi) (1 + 3 c u^2).
void geluBackward(double *din, const double *dout, const double *in,
                  std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double u = in[i];
    const double th = std::tanh(kGeluScale * (u + kGeluCubic * u * u * u));
    const double slope =
        0.5 * (1.0 + th) + 0.5 * u * (1.0 - th * th) * kGeluScale *
                               (1.0 + 3.0 * kGeluCubic * u * u);
    din[i] += dout[i] * slope;
  }
}

//===-- Residual: out = a + b (its backward copies the gradient to both) -----//

void residualForward(double *out, const double *a, const double *b,
                     std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

//===-- Cross-entropy: loss = logsumexp(logits) - logits[target] -------------//

void crossEntropyForward(double *losses, double *probs, const double *logits,
                         const std::int32_t *targets, std::int64_t rows,
                         std::int64_t vocab) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const double *z = logits + r * vocab;
    const double maxLogit = *std::max_element(z, z + vocab);
    double sum = 0;
    for (std::int64_t v = 0; v < vocab; ++v)
      sum += std::exp(z[v] - maxLogit);
    for (std::int64_t v = 0; v < vocab; ++v)
      probs[r * vocab + v] = std::exp(z[v] - maxLogit) / sum;
    losses[r] = maxLogit + std::log(sum) - z[targets[r]];
  }
}

/// dlogits = (softmax - onehot(target)) * dloss, dloss = 1 / rows for a mean.
void crossEntropyBackward(double *dlogits, const double *probs,
                          const std::int32_t *targets, double dloss,
                          std::int64_t rows, std::int64_t vocab) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t v = 0; v < vocab; ++v)
      dlogits[r * vocab + v] +=
          (probs[r * vocab + v] - (v == targets[r] ? 1.0 : 0.0)) * dloss;
}

//===-- The model
//-------------------------------------------------------------//

/// What one block's backward needs from its forward.
struct LayerActivations {
  Buffer ln1, ln1Mean, ln1Rstd; // [rows, C], [rows], [rows]
  Buffer qkv;                   // [rows, 3C]
  Buffer att;                   // [B, H, T, T] softmax probabilities
  Buffer attY;                  // [rows, C] heads merged
  Buffer attProj;               // [rows, C]
  Buffer mid;                   // [rows, C] residual after attention
  Buffer ln2, ln2Mean, ln2Rstd;
  Buffer fc;     // [rows, F] u
  Buffer gelu;   // [rows, F]
  Buffer fcProj; // [rows, C]

  explicit LayerActivations(const Dims &dims)
      : ln1(dims.rows() * dims.channels), ln1Mean(dims.rows()),
        ln1Rstd(dims.rows()), qkv(dims.rows() * 3 * dims.channels),
        att(dims.batch * dims.heads * dims.seq * dims.seq),
        attY(dims.rows() * dims.channels), attProj(attY.size()),
        mid(attY.size()), ln2(attY.size()), ln2Mean(dims.rows()),
        ln2Rstd(dims.rows()), fc(dims.rows() * dims.hidden), gelu(fc.size()),
        fcProj(attY.size()) {}
};

struct Activations {
  /// residuals[l] enters layer l; residuals[layers] enters the final
  /// LayerNorm.
  std::vector<Buffer> residuals;
  std::vector<LayerActivations> layers;
  Buffer lnf, lnfMean, lnfRstd;
  Buffer probs;  // [rows, V] softmax of the logits
  Buffer losses; // [rows]
};

/// The layer's residual branches as they join the stream: through their
/// dropout masks (all ones without dropout).
struct BranchFactors {
  Buffer attention, mlp;
  BranchFactors(const Dims &dims, std::int64_t layer)
      : attention(activationFactors(dims, attentionBranchDropoutSite(layer),
                                    dims.rows() * dims.channels)),
        mlp(activationFactors(dims, mlpBranchDropoutSite(layer),
                              dims.rows() * dims.channels)) {}
};

void layerForward(LayerActivations &a, Buffer &output, const Buffer &input,
                  const double *p, const LayerParameters &w, const Dims &dims,
                  std::int64_t layer) {
  const BranchFactors dropped(dims, layer);
  Buffer branch(dims.rows() * dims.channels);
  const std::int64_t n = dims.rows(), c = dims.channels, f = dims.hidden;
  layerNormForward(a.ln1.data(), a.ln1Mean.data(), a.ln1Rstd.data(),
                   input.data(), p + w.ln1W, p + w.ln1B, n, c);
  matmulForward(a.qkv.data(), a.ln1.data(), p + w.qkvW, p + w.qkvB, n, c,
                3 * c);
  attentionForward(a.attY.data(), a.att.data(), a.qkv.data(), dims, layer);
  matmulForward(a.attProj.data(), a.attY.data(), p + w.projW, p + w.projB, n, c,
                c);
  scaleElements(branch.data(), a.attProj.data(), dropped.attention);
  residualForward(a.mid.data(), input.data(), branch.data(), n * c);
  layerNormForward(a.ln2.data(), a.ln2Mean.data(), a.ln2Rstd.data(),
                   a.mid.data(), p + w.ln2W, p + w.ln2B, n, c);
  matmulForward(a.fc.data(), a.ln2.data(), p + w.fcW, p + w.fcB, n, c, f);
  geluForward(a.gelu.data(), a.fc.data(), n * f);
  matmulForward(a.fcProj.data(), a.gelu.data(), p + w.fcProjW, p + w.fcProjB, n,
                f, c);
  scaleElements(branch.data(), a.fcProj.data(), dropped.mlp);
  residualForward(output.data(), a.mid.data(), branch.data(), n * c);
}

/// dresidual holds the gradient of the layer's output on entry and that of
/// its input on return (the residual path passes it through unchanged).
void layerBackward(Buffer &dresidual, double *g, const LayerActivations &a,
                   const Buffer &input, const double *p,
                   const LayerParameters &w, const Dims &dims,
                   std::int64_t layer) {
  const std::int64_t n = dims.rows(), c = dims.channels, f = dims.hidden;
  const BranchFactors dropped(dims, layer);
  Buffer dbranch(n * c);
  Buffer dgelu(n * f), dfc(n * f), dln2(n * c);
  scaleElements(dbranch.data(), dresidual.data(), dropped.mlp);
  matmulBackward(dgelu.data(), g + w.fcProjW, g + w.fcProjB, dbranch.data(),
                 a.gelu.data(), p + w.fcProjW, n, f, c);
  geluBackward(dfc.data(), dgelu.data(), a.fc.data(), n * f);
  matmulBackward(dln2.data(), g + w.fcW, g + w.fcB, dfc.data(), a.ln2.data(),
                 p + w.fcW, n, c, f);
  layerNormBackward(dresidual.data(), g + w.ln2W, g + w.ln2B, dln2.data(),
                    a.mid.data(), p + w.ln2W, a.ln2Mean.data(),
                    a.ln2Rstd.data(), n, c);
  Buffer dattY(n * c), dqkv(n * 3 * c), dln1(n * c);
  scaleElements(dbranch.data(), dresidual.data(), dropped.attention);
  matmulBackward(dattY.data(), g + w.projW, g + w.projB, dbranch.data(),
                 a.attY.data(), p + w.projW, n, c, c);
  attentionBackward(dqkv.data(), dattY.data(), a.qkv.data(), a.att.data(), dims,
                    layer);
  matmulBackward(dln1.data(), g + w.qkvW, g + w.qkvB, dqkv.data(), a.ln1.data(),
                 p + w.qkvW, n, c, 3 * c);
  layerNormBackward(dresidual.data(), g + w.ln1W, g + w.ln1B, dln1.data(),
                    input.data(), p + w.ln1W, a.ln1Mean.data(),
                    a.ln1Rstd.data(), n, c);
}

Activations forward(const ParameterLayout &layout, const double *p,
                    const std::int32_t *tokens, const std::int32_t *targets,
                    const Dims &dims, std::int64_t layers) {
  const std::int64_t n = dims.rows(), c = dims.channels;
  Activations a;
  a.residuals.assign(layers + 1, Buffer(n * c));
  encoderForward(a.residuals[0].data(), tokens, p + layout.wte().offset,
                 p + layout.wpe().offset, dims);
  scaleElements(a.residuals[0].data(), a.residuals[0].data(),
                activationFactors(dims, embeddingDropoutSite(), n * c));
  for (std::int64_t l = 0; l < layers; ++l) {
    a.layers.emplace_back(dims);
    layerForward(a.layers[l], a.residuals[l + 1], a.residuals[l], p,
                 layout.layer(l), dims, l);
  }
  a.lnf.resize(n * c);
  a.lnfMean.resize(n);
  a.lnfRstd.resize(n);
  layerNormForward(a.lnf.data(), a.lnfMean.data(), a.lnfRstd.data(),
                   a.residuals[layers].data(), p + layout.lnfW(),
                   p + layout.lnfB(), n, c);
  Buffer logits(n * dims.vocab);
  matmulForward(logits.data(), a.lnf.data(), p + layout.head(), nullptr, n, c,
                dims.vocab);
  a.probs.resize(logits.size());
  a.losses.resize(n);
  crossEntropyForward(a.losses.data(), a.probs.data(), logits.data(), targets,
                      n, dims.vocab);
  return a;
}

Buffer backward(const ParameterLayout &layout, const double *p,
                const std::int32_t *tokens, const std::int32_t *targets,
                const Dims &dims, const Activations &a) {
  const std::int64_t n = dims.rows(), c = dims.channels;
  const std::int64_t layers = static_cast<std::int64_t>(a.layers.size());
  Buffer gradients(layout.totalSize(), 0.0);
  double *g = gradients.data();
  Buffer dlogits(n * dims.vocab), dlnf(n * c), dresidual(n * c);
  crossEntropyBackward(dlogits.data(), a.probs.data(), targets, 1.0 / n, n,
                       dims.vocab);
  matmulBackward(dlnf.data(), g + layout.head(), nullptr, dlogits.data(),
                 a.lnf.data(), p + layout.head(), n, c, dims.vocab);
  layerNormBackward(dresidual.data(), g + layout.lnfW(), g + layout.lnfB(),
                    dlnf.data(), a.residuals[layers].data(), p + layout.lnfW(),
                    a.lnfMean.data(), a.lnfRstd.data(), n, c);
  for (std::int64_t l = layers - 1; l >= 0; --l)
    layerBackward(dresidual, g, a.layers[l], a.residuals[l], p, layout.layer(l),
                  dims, l);
  scaleElements(dresidual.data(), dresidual.data(),
                activationFactors(dims, embeddingDropoutSite(), n * c));
  encoderBackward(g + layout.wte().offset, g + layout.wpe().offset,
                  dresidual.data(), tokens, dims);
  return gradients;
}

//===-- Argument checks
//-------------------------------------------------------//

[[noreturn]] void fail(const std::string &message) {
  throw Error("CPU GPT reference: " + message);
}

/// The offsets are only meaningful for the layout of this very config.
void checkLayout(const GptConfig &config, const ParameterLayout &layout) {
  const ParameterLayout expected(config);
  auto same = [](const ParameterTensor &x, const ParameterTensor &y) {
    return x.name == y.name && x.shape == y.shape && x.offset == y.offset;
  };
  if (layout.totalSize() != expected.totalSize() ||
      !std::equal(layout.tensors().begin(), layout.tensors().end(),
                  expected.tensors().begin(), expected.tensors().end(), same))
    fail("the parameter layout is not that of the config (" +
         config.describe() + ")");
}

void checkIds(const char *what, const std::vector<std::int32_t> &ids,
              std::int64_t vocab) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      fail(std::string(what) + " " + std::to_string(ids[i]) + " at index " +
           std::to_string(i) + " is outside [0, " + std::to_string(vocab) +
           ")");
}

Dims checkedDims(const GptConfig &config, const ParameterLayout &layout,
                 const std::vector<double> &parameters,
                 const std::vector<std::int32_t> &tokens,
                 const std::vector<std::int32_t> &targets, std::int64_t batch,
                 std::int64_t seq, const std::optional<DropoutDraw> &dropout) {
  config.validate();
  checkLayout(config, layout);
  if (static_cast<std::int64_t>(parameters.size()) != layout.totalSize())
    fail("parameters has " + std::to_string(parameters.size()) +
         " elements, the layout " + std::to_string(layout.totalSize()));
  if (batch <= 0 || seq <= 0)
    fail("batch (" + std::to_string(batch) + ") and seq (" +
         std::to_string(seq) + ") must be positive");
  if (seq > config.seq)
    fail("seq " + std::to_string(seq) + " exceeds the config's " +
         std::to_string(config.seq) + " positions");
  const std::string expected = "batch " + std::to_string(batch) + " * seq " +
                               std::to_string(seq) + " = " +
                               std::to_string(batch * seq);
  if (static_cast<std::int64_t>(tokens.size()) != batch * seq)
    fail("tokens has " + std::to_string(tokens.size()) +
         " elements, expected " + expected);
  if (static_cast<std::int64_t>(targets.size()) != batch * seq)
    fail("targets has " + std::to_string(targets.size()) +
         " elements, expected " + expected);
  checkIds("token", tokens, config.vocab);
  checkIds("target", targets, config.vocab);
  if (dropout && !(dropout->p >= 0.0f && dropout->p < 1.0f))
    fail("dropout must be in [0, 1), got " + std::to_string(dropout->p));
  Dims dims(config, batch, seq);
  dims.dropout = dropout;
  return dims;
}

double mean(const Buffer &values) {
  double sum = 0;
  for (double value : values)
    sum += value;
  return sum / static_cast<double>(values.size());
}

} // namespace

std::vector<double>
cpuGptPositionLosses(const GptConfig &config, const ParameterLayout &layout,
                     const std::vector<double> &parameters,
                     const std::vector<std::int32_t> &tokens,
                     const std::vector<std::int32_t> &targets,
                     std::int64_t batch, std::int64_t seq,
                     const std::optional<DropoutDraw> &dropout) {
  const Dims dims = checkedDims(config, layout, parameters, tokens, targets,
                                batch, seq, dropout);
  return forward(layout, parameters.data(), tokens.data(), targets.data(), dims,
                 config.layers)
      .losses;
}

double cpuGptLoss(const GptConfig &config, const ParameterLayout &layout,
                  const std::vector<double> &parameters,
                  const std::vector<std::int32_t> &tokens,
                  const std::vector<std::int32_t> &targets, std::int64_t batch,
                  std::int64_t seq, const std::optional<DropoutDraw> &dropout) {
  return mean(cpuGptPositionLosses(config, layout, parameters, tokens, targets,
                                   batch, seq, dropout));
}

CpuGptResult cpuGptLossAndGradients(const GptConfig &config,
                                    const ParameterLayout &layout,
                                    const std::vector<double> &parameters,
                                    const std::vector<std::int32_t> &tokens,
                                    const std::vector<std::int32_t> &targets,
                                    std::int64_t batch, std::int64_t seq,
                                    const std::optional<DropoutDraw> &dropout) {
  const Dims dims = checkedDims(config, layout, parameters, tokens, targets,
                                batch, seq, dropout);
  const Activations activations =
      forward(layout, parameters.data(), tokens.data(), targets.data(), dims,
              config.layers);
  CpuGptResult result;
  result.loss = mean(activations.losses);
  result.gradients = backward(layout, parameters.data(), tokens.data(),
                              targets.data(), dims, activations);
  return result;
}

} // namespace fa::train
