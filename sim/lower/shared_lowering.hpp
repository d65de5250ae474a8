// One lowering for several plans that make the same tasks.
//
// Plans that differ only in what they recompute (a sweep's recompute axis)
// lower to the same tasks, edges, collectives and routes: their stage costs
// differ only in the passes' times, the communication inside them and the
// activations' memory. SharedLowering lowers the first plan once; each
// other plan gets a copy of that simulation, made before it runs, with the
// compute tasks' durations, the bucket trains and the memory effects set
// from its own stage costs as a lowering of its own would set them. A copy
// runs to the same bytes a fresh lowering of its plan gives (tests/lower/
// test_shared_lowering.cpp); building one (a copy of the tables, the
// compute tasks' times and the activations' bytes set again) costs about a
// fifth of a lowering.
#pragma once

#include <memory>

#include "lower/simulation.hpp"

namespace trainsim::lower {

namespace detail {
class Lowering;
}

// A copy of `sim` as lower() gave it, before it runs: every table and
// runtime object (streams, network, topology, collectives, memory) its own,
// wired to each other as the original's are. Throws std::logic_error once
// `sim` has run.
std::unique_ptr<Simulation> copy_unrun(const Simulation& sim);

class SharedLowering {
 public:
  // Lowers the first plan, as lower() would. Everything given must outlive
  // this object.
  SharedLowering(const schedule::Program& program, const schedule::Shape& shape, const Wiring& wiring,
                 const workload::StageCosts& costs, const hw::ClusterSpec& cluster, const workload::Plan& plan,
                 const Options& options);
  ~SharedLowering();
  SharedLowering(const SharedLowering&) = delete;
  SharedLowering& operator=(const SharedLowering&) = delete;

  // Whether a plan of the same program, shape, cluster and options (its
  // plan the first's but for what it recomputes) with stage costs `costs`
  // can take a copy: its stages differ from the first's only in the values
  // a copy sets, no stage has experts, no action ran paired with another
  // (Overlap::moe_a2a), and the lowering keeps briefs (Options::task_info
  // off: a TaskInfo names the communication inside it, which a copy does
  // not set).
  bool fits(const workload::StageCosts& costs) const;
  // A copy for `costs`, or null where they do not fit; only while the first
  // simulation has not been taken (std::logic_error after).
  std::unique_ptr<Simulation> copy_for(const workload::StageCosts& costs) const;
  // The work of the first lowering, as lower() estimated it (a copy takes as much memory again).
  const WorkEstimate& estimate() const { return estimate_; }
  // The first plan's simulation itself; no copies after this.
  std::unique_ptr<Simulation> take();

 private:
  std::unique_ptr<detail::Lowering> lowering_;
  std::unique_ptr<Simulation> first_;
  WorkEstimate estimate_;
};

}  // namespace trainsim::lower
