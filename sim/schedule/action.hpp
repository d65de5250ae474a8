// The action IR: a Program lists, for every pipeline rank, the actions it
// performs in order. It is pure order, no time: durations come later, when the
// program is lowered onto costs and hardware.
//
// The vocabulary follows torch.distributed.pipelining, so an action prints as
// `<stage><op><micro-batch>`, e.g. `0F0`, `1B3`, `2W3`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::schedule {

enum class Op : std::uint8_t {
  kForward,     // F
  kBackward,    // B: full backward (= I then W)
  kInputGrad,   // I: backward w.r.t. inputs only
  kWeightGrad,  // W: backward w.r.t. weights only
};

struct Action {
  Op op = Op::kForward;
  int stage = 0;
  int microbatch = 0;
  friend bool operator==(const Action&, const Action&) = default;
};

// `0F0`-style text of one action.
std::string to_string(const Action& a);
char op_letter(Op op);

// What a schedule needs to know to lay out its program.
struct Shape {
  int ranks = 1;         // pipeline ranks
  int stages = 1;        // pipeline stages (ranks x virtual stages per rank)
  int microbatches = 1;  // per iteration
  std::vector<int> stage_rank;  // stage -> rank that runs it

  // The usual placement: stage s on rank s.
  static Shape linear(int ranks, int microbatches);
};

struct Program {
  std::vector<std::vector<Action>> ranks;  // actions per rank, in issue order
};

}  // namespace trainsim::schedule
