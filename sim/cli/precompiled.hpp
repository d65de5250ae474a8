// The headers every command of the command line includes, precompiled once
// for the trainsim executable (sim/CMakeLists.txt). Each file still includes
// what it uses.
#pragma once

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "config/load.hpp"
