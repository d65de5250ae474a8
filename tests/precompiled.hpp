// The headers that nearly every test includes, precompiled once for all test
// executables (tests/CMakeLists.txt). Each test still includes what it uses.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "hw/collective.hpp"
#include "workload/stage_costs.hpp"
