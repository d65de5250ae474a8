#include "config/gpu_match.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "config/presets.hpp"

namespace trainsim::config {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

std::vector<std::string> name_words(const std::string& s) {
  std::vector<std::string> out;
  std::string w;
  for (char c : s + " ") {
    if (alnum(c)) {
      w += c;
    } else if (!w.empty()) {
      out.push_back(w);
      w.clear();
    }
  }
  return out;
}

// "a100" of "a100-sxm4-80gb": the chip, not the board or the memory.
std::string model_of(const std::string& name) {
  for (const std::string& w : name_words(name)) {
    if (std::any_of(w.begin(), w.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return w;
  }
  return {};
}

// The name itself, case aside, with or without the driver's "NVIDIA ".
bool same_name(const std::string& device, const std::string& gpu_name) {
  const std::string d = lower(device), g = lower(gpu_name);
  return d == g || d == "nvidia " + g;
}

}  // namespace

bool same_gpu(const std::string& device, const std::string& gpu_name) {
  if (same_name(device, gpu_name)) return true;
  const std::string d = lower(device);
  const std::string model = model_of(lower(gpu_name));
  if (model.empty()) return false;
  const std::vector<std::string> device_words = name_words(d);
  return std::find(device_words.begin(), device_words.end(), model) != device_words.end();
}

std::string gpu_preset_for(const std::string& device) {
  // Among the presets of the device's model, the one sharing the most words
  // with the device name ("80gb", "hbm3" of "NVIDIA H100 80GB HBM3"), if one
  // shares more than any other.
  const std::vector<std::string> device_words = name_words(lower(device));
  std::string best;
  std::size_t best_shared = 0;
  bool tie = false;
  for (const std::string& preset : preset_names("gpu")) {
    if (same_name(device, preset)) return preset;  // the preset of that very name wins
    if (!same_gpu(device, preset)) continue;
    std::size_t shared = 0;
    for (const std::string& w : name_words(lower(preset))) {
      shared += std::find(device_words.begin(), device_words.end(), w) != device_words.end();
    }
    if (best.empty() || shared > best_shared) {
      best = preset;
      best_shared = shared;
      tie = false;
    } else if (shared == best_shared) {
      tie = true;
    }
  }
  return tie ? std::string() : best;
}

}  // namespace trainsim::config
