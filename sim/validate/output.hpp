// A validation result for people (a table, MAPE per group and overall, the
// worst row, the orderings) and for machines (one JSON object, stable keys).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "validate/validate.hpp"

namespace trainsim::validate {

// `verbose` adds each case's source, assumptions and notes.
std::string to_text(const Result& r, bool verbose = false);
nlohmann::json to_json(const Result& r);

// A value as the table shows it: four significant figures or so, whole
// numbers from 1000 up.
std::string show_value(double v);

}  // namespace trainsim::validate
