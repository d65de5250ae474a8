// The clock a power-limited GPU holds depends on how much of its time the
// tensor cores work. GpuSpec::sustained_tensor_fraction is what back-to-back
// tensor-core work sustains of the short-run figures (a burn: duty 1); a
// training step also runs memory-bound kernels and blocking collectives,
// which draw less power, and the clock recovers part of the way. To first
// order the held share falls linearly with the duty d, the tensor cores'
// share of the GPU's compute time:
//   f(d) = 1 - d (1 - burn)
// Measured on an H200 (docs/hardware.md, "Measured on an H200"): burn 0.848
// at d = 1, and 0.90-0.92 with GEMMs about two thirds of the time, where the
// line gives 0.89-0.90. d itself depends on f (slower tensor work takes a
// larger share), so f is the fixed point. d counts what the costs count as
// tensor time: where a GEMM hides under a longer collective (async TP, the
// context-parallel ring), only its exposed part, so d runs a little low
// there; bubbles and exposed data-parallel communication are not in it.
#pragma once

namespace trainsim::workload {

// The line itself: what a GPU whose tensor work takes `duty` of its compute
// time holds, 1 - duty (1 - burn).
double held_fraction(double duty, double burn);

// The tensor work's share of the compute time when it runs at `held` of its
// short-run figures: (tensor / held) / (tensor / held + other).
double tensor_duty(double tensor_s, double other_s, double held);

// The share of the short-run tensor-core figures held, given the compute
// time that runs on tensor cores at the short-run figures (`tensor_s`, GEMMs
// and attention), the compute time that does not (`other_s`: element-wise
// kernels, blocking collectives) and the GPU's burn fraction. 1 when there is
// no tensor work or no throttling.
double duty_clock_fraction(double tensor_s, double other_s, double burn);

}  // namespace trainsim::workload
