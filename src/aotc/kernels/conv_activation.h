// The activation that conv.cpp's paths apply to finished results (aotc_conv_shape.clamped,
// after the bias and the residual): none, a clamp to [lo, hi] (a fused ReLU, ReLU6 or
// hardtanh; a NaN stays NaN), or hardswish. The vector forms are in conv_direct.h and, for
// aotc_sgemm_act's stores, gemm_microkernels.h.
#ifndef AOTC_CONV_ACTIVATION_H
#define AOTC_CONV_ACTIVATION_H

#include <algorithm>

namespace aotc_conv_act {

constexpr int NONE = 0, CLAMP = 1, HARDSWISH = 2;

// hardswish is v * min(max(v + 3, 0), 6) times 1/6: torch divides by 6, which differs by at
// most an ulp, but a division on every result cost the convolutions as much as the separate
// pass it replaces. lo and hi are the clamp's.
inline float activate(float v, int act, float lo, float hi) {
    if (act == HARDSWISH) return v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
    return act == CLAMP ? std::min(std::max(v, lo), hi) : v;
}

}  // namespace aotc_conv_act

#endif
