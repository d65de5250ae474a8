#!/usr/bin/env python3
"""Prints README.md's table of one layer's simulated forward and backward time
against Korthikanti et al.'s Table 4 (arXiv:2205.05198: one layer of their 22B
GPT, tp 8, micro-batch 4, on a DGX A100).

A run's summary has no per-layer time, so the layer's time is taken from two
timelines: the model with 4 layers and with 2 (on one pipeline rank, which
also runs the embedding, the output layer and the optimizer step), half the
difference of GPU 0's forward and backward time. The plan is the Table 5 case
korthikanti_t5_22B_full_recompute of tests/validation/cases.json with the
recompute mode and sequence parallelism of each Table 4 row; the measured
times are the records korthikanti_t4_22B_layer_* of the published runs.

usage: tools/validation/layer_times.py [--runs PATH/published-runs.json]
       (TRAINSIM=path/to/trainsim, default build/trainsim)
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CASES = os.path.join(ROOT, "tests", "validation", "cases.json")
DEFAULT_RUNS = os.path.join(ROOT, "..", "shared", "validation", "published-runs.json")
BASE_CASE = "korthikanti_t5_22B_full_recompute"
TRAINSIM = os.environ.get("TRAINSIM", os.path.join(ROOT, "build", "trainsim"))

# Table 4's rows: (record id suffix, label, recompute, sequence parallelism).
ROWS = [
    ("baseline_no_recompute", "no recompute", "none", False),
    ("sequence_parallel", "sequence parallelism", "none", True),
    ("full_recompute", "full recompute", "full", False),
    ("selective_recompute", "selective recompute", "selective", False),
    ("selective+sequence", "selective + sequence parallelism", "selective", True),
]



def gpu0_busy_ms(config_path: str, settings: list, trace_path: str) -> dict:
    """Milliseconds GPU 0's compute stream spends in each kind of task (F, B, I, W, ...)
    in the run of the config with `settings` (KEY=VALUE overrides)."""
    command = [TRAINSIM, "run", config_path, "--trace", trace_path]
    for setting in settings:
        command += ["--set", setting]
    subprocess.run(command, check=True, capture_output=True)
    with open(trace_path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    busy = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and threads.get((e["pid"], e["tid"]), "").startswith("GPU 0 compute"):
            busy[e["name"].split(" ")[0]] += e["dur"] / 1000.0
    return busy


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=DEFAULT_RUNS, help=f"published-runs.json (default {DEFAULT_RUNS})")
    args = ap.parse_args()
    if not os.path.exists(TRAINSIM):
        print(f"error: {TRAINSIM} not found; build first (cmake --build build) or set TRAINSIM", file=sys.stderr)
        return 1
    try:
        with open(args.runs) as f:
            records = {r["id"]: r for r in json.load(f)["records"]}
    except (OSError, ValueError, KeyError) as e:
        print(f"error: cannot read the published runs {args.runs}: {e} (give --runs PATH)", file=sys.stderr)
        return 2
    with open(CASES) as f:
        base = next(c["config"] for c in json.load(f)["cases"] if c["id"] == BASE_CASE)
    print("| layer | measured | simulated |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as workdir:
        config_path = os.path.join(workdir, "layer.json")
        trace_path = os.path.join(workdir, "layer.trace.json")
        with open(config_path, "w") as f:
            json.dump(base, f)
        for suffix, label, recompute, sp in ROWS:
            record_id = "korthikanti_t4_22B_layer_" + suffix
            if record_id not in records:
                print(f"error: {args.runs} has no record {record_id}", file=sys.stderr)
                return 2
            fwd, bwd = records[record_id]["measured"]["fwd_ms"], records[record_id]["measured"]["bwd_ms"]
            busy = {}
            for layers in (4, 2):
                settings = [f"model.layers={layers}", f"parallel.recompute={recompute}",
                            f"parallel.sequence_parallel={'true' if sp else 'false'}"]
                busy[layers] = gpu0_busy_ms(config_path, settings, trace_path)
            per_layer = {k: (busy[4][k] - busy[2].get(k, 0.0)) / 2 for k in busy[4]}
            forward = per_layer.get("F", 0.0)
            backward = sum(per_layer.get(k, 0.0) for k in ("B", "I", "W"))
            print(f"| {label} | {fwd} / {bwd} | {forward:.1f} / {backward:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
