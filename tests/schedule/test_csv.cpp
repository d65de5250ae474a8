#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "schedule/check.hpp"
#include "schedule/communication.hpp"
#include "schedule/csv.hpp"
#include "schedule/registry.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace schedule_csv_test {

using namespace trainsim::schedule;

namespace {

// The message parse_csv fails with ("" if it parses).
std::string error_of(const std::string& text) {
  try {
    parse_csv(text);
  } catch (const CsvError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("CSV: one row per rank, one compute action per cell") {
  const Program p = parse_csv("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
  REQUIRE(p.ranks.size() == 2);
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0B0 0B1");
  CHECK(to_string(p.ranks[1]) == "1F0 1B0 1F1 1B1");
}

TEST_CASE("CSV: I and W, multi-digit indices") {
  const Program p = parse_csv("12F10,12I10,12W10\n");
  REQUIRE(p.ranks.size() == 1);
  CHECK(p.ranks[0][0] == Action{Op::kForward, 12, 10});
  CHECK(p.ranks[0][1] == Action{Op::kInputGrad, 12, 10});
  CHECK(p.ranks[0][2] == Action{Op::kWeightGrad, 12, 10});
}

TEST_CASE("CSV: the legacy BW token is a full backward") {
  const Program p = parse_csv("0F0,0BW0\n");
  CHECK(to_string(p.ranks[0]) == "0F0 0B0");
}

TEST_CASE("CSV: empty cells are idle slots and are skipped") {
  // torch writes an idle time step as an empty cell: "0F0,,0B0".
  const Program p = parse_csv(",0F0,,0B0,\n1F0, ,1B0\n");
  CHECK(to_string(p.ranks[0]) == "0F0 0B0");
  CHECK(to_string(p.ranks[1]) == "1F0 1B0");
}

TEST_CASE("CSV: spaces, quotes, CRLF, a byte-order mark and blank last lines are tolerated") {
  const Program p = parse_csv("\xEF\xBB\xBF 0F0 ,\"0B0\"\r\n1F0,1B0\r\n\r\n\n");
  REQUIRE(p.ranks.size() == 2);
  CHECK(to_string(p.ranks[0]) == "0F0 0B0");
  CHECK(to_string(p.ranks[1]) == "1F0 1B0");
}

TEST_CASE("CSV: a missing final newline is fine") {
  CHECK(parse_csv("0F0,0B0\n1F0,1B0").ranks == parse_csv("0F0,0B0\n1F0,1B0\n").ranks);
}

TEST_CASE("CSV: bad cells are named by line and column") {
  // "0F0,0X1": the second cell starts at column 5 of line 1.
  CHECK(error_of("0F0,0X1\n") ==
        "1:5: bad action \"0X1\": expected <stage><op><micro-batch> with op F, B, I or W (or BW for B), e.g. 0F0 or 1B3");
  // Line 2, after a space: column 6.
  CHECK(error_of("0F0\n1F0, F1\n").rfind("2:6: bad action \"F1\": expected", 0) == 0);
  CHECK(error_of("0F0,0F\n") == "1:5: bad action \"0F\": no micro-batch after the op (expected e.g. 0F0)");
  CHECK(error_of("0F0x\n").rfind("1:1: bad action \"0F0x\": expected", 0) == 0);
  CHECK(error_of("-1F0\n").rfind("1:1: bad action \"-1F0\"", 0) == 0);
  CHECK(error_of("0f0\n").rfind("1:1: bad action \"0f0\"", 0) == 0);  // ops are upper case, as torch prints them
  CHECK(error_of("0F99999999999\n") == "1:1: bad action \"0F99999999999\": micro-batch index too large (at most 10000000)");
  CHECK(error_of("0F0,0SEND_F0\n") ==
        "1:5: \"0SEND_F0\" is a communication action: the CSV lists compute actions only (F, B, I, W); the simulator "
        "adds communication itself");
  CHECK(error_of("0F0,OPTIMIZER\n").rfind("1:5: \"OPTIMIZER\" is a communication action", 0) == 0);
  CHECK(error_of("") == "1:1: no rows: expected one row of actions per pipeline rank");
  CHECK(error_of("\n \n").rfind("1:1: no rows", 0) == 0);
  // A control character in a cell does not break the one-line message.
  CHECK(error_of("0F\x01\n") == "1:1: bad action \"0F?\": expected <stage><op><micro-batch> with op F, B, I or W "
                                "(or BW for B), e.g. 0F0 or 1B3");
}

TEST_CASE("CSV: an action listed twice is named where both are") {
  // "0B1" at line 1, column 9 ("0F0,0F1," takes 8 characters), again at line 2, column 5.
  CHECK(error_of("0F0,0F1,0B1,0B0\n1F0,0B1\n") ==
        "2:5: \"0B1\" is listed twice (first at 1:9); each action runs once, on one rank");
  // BW is B's older spelling: the same action.
  CHECK(error_of("0F0,0B0,0BW0\n") == "1:9: \"0BW0\" is listed twice (first at 1:5); each action runs once, on one rank");
  // The same stage and micro-batch with another op is another action.
  CHECK(error_of("0F0,0I0,0W0\n").empty());
}

TEST_CASE("CsvError carries the line and column") {
  try {
    parse_csv("0F0\n1F0,1Q0\n");
    FAIL("no error");
  } catch (const CsvError& e) {
    CHECK(e.line() == 2);
    CHECK(e.column() == 5);
  }
}

TEST_CASE("CSV written: one line per rank, cells separated by commas") {
  const Program p = find_schedule("1f1b")->program(Shape::linear(2, 3));
  // 1F1B, p = 2, m = 3: rank 0 warms up with one forward, rank 1 with none.
  CHECK(to_csv(p) == "0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n");
  Program comm = with_communication(p, Shape::linear(2, 3));
  CHECK_THROWS_AS(to_csv(comm), std::invalid_argument);
}

TEST_CASE("the implied shape, and a shape that does not fit") {
  const Program p = parse_csv("0F0,0F1,2F0,2F1,2B0,2B1,0B0,0B1\n1F0,1F1,3F0,3F1,3B0,3B1,1B0,1B1\n");
  const ImpliedShape s = implied_shape(p);
  CHECK(s.ranks == 2);
  CHECK(s.stages == 4);
  CHECK(s.microbatches == 2);
  CHECK_NOTHROW(check_fits(p, Shape::looped(2, 2, 2)));
  auto message = [&](const Shape& shape) {
    try {
      check_fits(p, shape);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(Shape::looped(4, 1, 2)) == "2 rows (one per pipeline rank), but the plan has 4 pipeline ranks (pp)");
  CHECK(message(Shape::looped(2, 1, 2)) == "stages 0..3 (4), but the plan has 2 (pp x vp = 2 x 1)");
  CHECK(message(Shape::looped(2, 2, 8)) ==
        "micro-batches 0..1 (2), but the plan runs 8 per pipeline (global_batch / (dp x microbatch_size))");
  CHECK(message(Shape::looped(1, 1, 1)).rfind("2 rows", 0) == 0);
  CHECK_THROWS_AS(check_fits(parse_csv(",,\n"), Shape::linear(1, 1)), std::invalid_argument);  // no actions
}

TEST_CASE("CsvSchedule lays out its one shape") {
  const CsvSchedule s("csv:x.csv", parse_csv("0F0,0B0\n1F0,1B0\n"));
  CHECK(s.name() == "csv:x.csv");
  CHECK(to_string(s.program(Shape::linear(2, 1)).ranks[0]) == "0F0 0B0");
  CHECK_THROWS_AS(s.program(Shape::linear(2, 2)), std::invalid_argument);
  CHECK(is_csv_name("csv:x.csv"));
  CHECK(!is_csv_name("1f1b"));
  CHECK(!is_csv_name("cs"));
}

TEST_CASE("every registered schedule survives export and import unchanged") {
  // The registry is walked, so schedules added later are covered too; shapes
  // a schedule refuses (std::invalid_argument) are skipped, but each schedule
  // must accept at least one. (A CSV schedule is one pipeline: DualPipe's two
  // directions do not fit one, and `trainsim export` refuses them.)
  for (const auto& s : all_schedules()) {
    if (pipelines_of(s->placement()) > 1) continue;
    CAPTURE(std::string(s->name()));
    int accepted = 0;
    for (int ranks : {1, 2, 3, 4}) {
      for (int vp : {1, 2, 3}) {
        for (int m : {1, 2, 3, 4, 8}) {
          const Shape shape = Shape::placed(s->placement(), ranks, vp, m);
          Program p;
          try {
            p = s->program(shape);
          } catch (const std::invalid_argument&) {
            continue;
          }
          ++accepted;
          CAPTURE(ranks);
          CAPTURE(vp);
          CAPTURE(m);
          const Program back = parse_csv(to_csv(p));
          CHECK(back.ranks == p.ranks);
          CHECK(implied_placement(back) == (ranks == 1 ? Placement::kLooped : s->placement()));
          CHECK_NOTHROW(check_fits(back, shape));
          CHECK_NOTHROW(check(with_communication(back, shape), shape));
        }
      }
    }
    CHECK(accepted > 0);
  }
}

}  // namespace schedule_csv_test
