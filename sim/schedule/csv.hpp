// A schedule as CSV text, in torch.distributed.pipelining's compute-only form
// (what its `_dump_csv` writes and `_load_csv` reads): row r lists rank r's
// compute actions in issue order, one per cell, printed as
// `<stage><op><micro-batch>` (`0F0`, `1I3`, `2W3`, `0B1`).
//
// Reading also accepts what torch's files may hold besides: empty cells (idle
// time steps), the legacy token `BW` for a full backward (`0BW1` = `0B1`),
// spaces around a cell, a quoted cell, CRLF line ends, a UTF-8 byte-order mark
// and blank lines at the end. Communication actions are refused: the
// simulator adds its own (see communication.hpp).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

// A cell that is not a compute action; the message starts "LINE:COLUMN: ".
class CsvError : public std::runtime_error {
 public:
  CsvError(int line, int column, const std::string& what);
  int line() const { return line_; }      // from 1
  int column() const { return column_; }  // from 1, in bytes
 private:
  int line_;
  int column_;
};

// Reads a compute-only program; throws CsvError at the first bad cell.
Program parse_csv(std::string_view text);

// Writes a compute-only program, one line per rank (throws
// std::invalid_argument on a communication action).
std::string to_csv(const Program& program);

// `parallel.schedule` names of the form "csv:PATH".
inline constexpr std::string_view kCsvPrefix = "csv:";
inline bool is_csv_name(std::string_view name) { return name.substr(0, kCsvPrefix.size()) == kCsvPrefix; }

// The shape a program read from CSV implies: a rank per row, stages and
// micro-batches up to the largest index named.
struct ImpliedShape {
  int ranks = 0;
  int stages = 0;
  int microbatches = 0;
};
ImpliedShape implied_shape(const Program& program);

// The placement whose map puts every action on its row's rank: looped if it
// fits (as with one stage per rank, where both do), else a V if that fits,
// else looped, and the program's check then names the misplaced action.
Placement implied_placement(const Program& program);

// Throws std::invalid_argument, saying what differs, when a program read from
// CSV has other ranks, stages or micro-batches than `shape`.
void check_fits(const Program& program, const Shape& shape);

// A schedule read from a CSV file: it lays out the one shape the file was
// written for.
class CsvSchedule final : public Schedule {
 public:
  CsvSchedule(std::string name, Program program)
      : name_(std::move(name)), program_(std::move(program)), placement_(implied_placement(program_)) {}
  std::string_view name() const override { return name_; }
  std::string_view description() const override { return "a schedule read from a CSV file"; }
  Program program(const Shape& shape) const override;
  Placement placement() const override { return placement_; }

 private:
  std::string name_;  // "csv:PATH" as the config gives it
  Program program_;
  Placement placement_;
};

}  // namespace trainsim::schedule
