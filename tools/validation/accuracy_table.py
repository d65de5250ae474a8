#!/usr/bin/env python3
"""Prints docs/accuracy.md's tables from `trainsim validate --json`.

usage: tools/validation/accuracy_table.py [TRAINSIM] [CASES.json]
(defaults: build/trainsim, tests/validation/cases.json)
"""
import argparse
import json
import os
import subprocess
import sys

ap = argparse.ArgumentParser(description="Prints docs/accuracy.md's tables from `trainsim validate --json`.")
ap.add_argument("trainsim", nargs="?", default="build/trainsim", help="the trainsim binary (default build/trainsim)")
ap.add_argument("cases", nargs="?", default="tests/validation/cases.json",
                help="the validation cases (default tests/validation/cases.json)")
args = ap.parse_args()
trainsim, cases = args.trainsim, args.cases
try:
    run = subprocess.run([trainsim, "validate", cases, "--json"], capture_output=True, text=True)
except OSError as e:
    sys.exit(f"error: cannot run {trainsim}: {e.strerror} (build it first, or give its path)")
# No limits are given, so anything but exit 0 is an error (7 would be a limit exceeded).
if run.returncode != 0 or not run.stdout.strip():
    sys.exit(f"error: {trainsim} validate {cases} failed (exit {run.returncode}): {run.stderr.strip()}")
d = json.loads(run.stdout)

for kind, title in (("performance", "iteration time / throughput"), ("memory", "memory"),
                    ("layer_time", "one layer's time")):
    m = d["mape"][kind]
    if m["rows"] == 0:
        continue
    print(f"| source ({title}) | rows | MAPE |")
    print("|---|---|---|")
    for g in m["groups"]:
        print(f"| {g['group']} | {g['rows']} | {g['mape_pct']:.1f}% |")
    print(f"| **overall** | {m['rows']} | **{m['overall_pct']:.1f}%** |")
    w = m["worst"]
    print(f"\nWorst: `{w['case']}` {w['metric']}, measured {w['measured']:.4g}, predicted {w['predicted']:.4g} "
          f"({w['error_pct']:+.1f}%).\n")

# The sources whose runs shard a model unit by unit (DeepSpeed's stage 3 and
# PyTorch's FSDP outside TorchTitan), read together: each has too few rows to
# stand alone.
SHARDED = ("DeepSpeed ZeRO-3 on Azure", "fms-fsdp Llama 2", "llm-foundry MPT")
sharded = [r for r in d["rows"] if r["kind"] == "performance" and r["group"] in SHARDED]
if sharded:
    worst = max(sharded, key=lambda r: abs(r["error_pct"]))
    print("| FSDP and ZeRO-3 runs (iteration time / throughput) | rows | MAPE | largest error |")
    print("|---|---|---|---|")
    print(f"| {', '.join(SHARDED)} | {len(sharded)} | "
          f"{sum(abs(r['error_pct']) for r in sharded) / len(sharded):.1f}% | "
          f"{worst['error_pct']:+.1f}% (`{worst['case']}`) |\n")


# The same rows by the GPU each case runs on (the node preset's, or the
# config's own), so that one GPU's figures are read apart from another's.
def gpu_of(case_config) -> str:
    if isinstance(case_config, str):  # a config file beside the cases
        case_config = json.load(open(os.path.join(os.path.dirname(cases), case_config)))
    node = case_config["cluster"]["node"]
    if isinstance(node, str):
        node = json.load(open(os.path.join(root, "configs", "hardware", "nodes", node + ".json")))
    gpu = node["gpu"]
    return gpu if isinstance(gpu, str) else gpu.get("name", "custom GPU")


root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
configs = {c["id"]: c["config"] for c in json.load(open(cases))["cases"]}
for kind, title in (("performance", "iteration time / throughput"), ("memory", "memory")):
    by_gpu: dict[str, list[float]] = {}
    for r in d["rows"]:
        if r["kind"] == kind:
            by_gpu.setdefault(gpu_of(configs[r["case"]]), []).append(abs(r["error_pct"]))
    print(f"| GPU ({title}) | rows | MAPE |")
    print("|---|---|---|")
    for gpu in sorted(by_gpu):
        errors = by_gpu[gpu]
        print(f"| {gpu} | {len(errors)} | {sum(errors) / len(errors):.1f}% |")
    print()

print(f"Orderings: {d['orderings_passed']} pass, {d['orderings_failed']} fail.\n")
print("<details><summary>Every row</summary>\n")
print("| case | metric | measured | predicted | error |")
print("|---|---|---|---|---|")
for r in d["rows"]:
    print(f"| `{r['case']}` | {r['metric']} | {r['measured']:.4g} | {r['predicted']:.4g} | {r['error_pct']:+.1f}% |")
print("\n</details>")
