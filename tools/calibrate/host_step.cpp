#include "host_step.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "stats.hpp"

namespace calibrate {

namespace {

// One AdamW step as DeepSpeed's CPU Adam takes it per element: decoupled
// weight decay, both moments, the bias-corrected update. Reads p, g, m, v
// and writes p, m, v: 28 bytes a parameter.
void adamw_step(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m, std::vector<float>& v,
                int step) {
  const float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, decay = 0.1f;
  const float bias1 = 1.0f - std::pow(beta1, static_cast<float>(step));
  const float bias2_sqrt = 1.0f / std::sqrt(1.0f - std::pow(beta2, static_cast<float>(step)));
  const float step_size = -lr / bias1;
  const float keep = 1.0f - lr * decay;
  const std::size_t n = p.size();
  for (std::size_t i = 0; i < n; ++i) {
    const float grad = g[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * grad;
    const float vi = beta2 * v[i] + (1.0f - beta2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * keep + step_size * mi / (std::sqrt(vi) * bias2_sqrt + eps);
  }
}

}  // namespace

nlohmann::json measure_host_adam(std::size_t params, int samples) {
  if (params == 0 || samples < 1) throw std::invalid_argument("measure_host_adam: params and samples must be positive");
  std::vector<float> p(params, 0.5f), g(params), m(params, 0.0f), v(params, 0.0f);
  for (std::size_t i = 0; i < params; ++i) g[i] = 1e-3f * static_cast<float>(i % 97) - 0.05f;
  adamw_step(p, g, m, v, 1);  // pages touched, caches warm
  std::vector<double> seconds;
  for (int k = 0; k < samples; ++k) {
    const auto start = std::chrono::steady_clock::now();
    adamw_step(p, g, m, v, k + 2);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  // Keep the result alive: a step nothing reads could be left out.
  volatile float sink = p[params / 2];
  (void)sink;
  return {{"adam_params_per_s", to_json(rate(seconds, static_cast<double>(params)))},
          {"threads", 1},
          {"params", params}};
}

}  // namespace calibrate
