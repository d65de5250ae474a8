#!/usr/bin/env python3
"""README's Python example: tokens a second of the default example (GPT 1.7B
on one DGX A100) for each micro-batch size, drawn with matplotlib into
docs/python-microbatch.svg.

    usage: PYTHONPATH=build/python python3 tools/python_example.py [OUT.svg]
"""
import sys

if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0)
try:
    import matplotlib
except ModuleNotFoundError:
    sys.exit("error: this example draws with matplotlib, which is not installed (Debian: apt-get install python3-matplotlib)")

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

try:
    import trainsim  # noqa: E402
except ModuleNotFoundError:
    sys.exit("error: the trainsim module is not on the path: build it, then run with PYTHONPATH=build/python")

matplotlib.rcParams["svg.hashsalt"] = "trainsim"  # the same file each run

sizes = [1, 2, 4, 8, 16]
rows = []
for mbs in sizes:
    s = trainsim.run("configs/examples/gpt-1.7b-8xa100.json", set={"parallel.microbatch_size": mbs})
    rows.append((mbs, s["tokens_per_s"], s["peak_memory_bytes"] / 2**30))
    print(f"micro-batch {mbs:2d}: {s['tokens_per_s']:9.0f} tokens/s, {rows[-1][2]:5.2f} GiB")

fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(sizes, [r[1] for r in rows], marker="o")
ax.set_xscale("log", base=2)
ax.set_xticks(sizes, [str(x) for x in sizes])
ax.set_xlabel("micro-batch size (sequences)")
ax.set_ylabel("tokens / s")
ax.set_title("GPT 1.7B on 8 A100s (tp 2, pp 4, 1F1B)")
ax.grid(True, alpha=0.3)
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "docs/python-microbatch.svg", metadata={"Date": None})
