#!/usr/bin/env python3
"""Writes the Hopper GPU presets' gemm_fp8_grid: each preset's own BF16 shape
grid (gemm_grid, XLA's sm_90 sweep) times the FP8-over-BF16 ratio that one
calibration profile measured at the same (m, n, k) on a Hopper GPU.

Why a ratio: no FP8 shape sweep of Hopper is published, while FP8's gain over
BF16 depends on the shape (on an H200, about 1.85x where every dimension is
1,024 or more, but about 1x where the reduction dimension is 256, and 0.57x at
1024^3). The ratio of two grids measured by one harness on one GPU carries
that dependence onto the BF16 sweep the preset already uses; the preset's FP8
ceiling (gemm_fp8_max_tflops) still caps the result when it is timed. The
grid's axes are the BF16 sweep's and 8192 (see EXTRA).

  python3 tools/calibrate/hopper_fp8_grid.py                 # rewrite the presets
  python3 tools/calibrate/hopper_fp8_grid.py --check         # exit 1 if they differ

Only the grid's values and its source line are written; every other byte of a
preset stays as it is.
"""
import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROFILE = "configs/calibration/h200-sxm-141gb.json"
# The presets of GH100 compute (the same tensor cores, at 700 W or below).
PRESETS = ["H100-SXM5-80GB", "H200-SXM-141GB", "H800-SXM5-80GB", "H100-HBM2e-96GB-500W"]


def ratio_grid(profile, axes):
    """FP8 over BF16 medians at every (m, n, k) of `axes` (m, n and k lists), which must be points
    of the profile's grids."""
    bf16, fp8 = profile["gemm"]["bf16"], profile["gemm"]["fp8"]
    for g in (bf16, fp8):
        for key in ("m", "n", "k"):
            missing = [x for x in axes[key] if x not in g[key]]
            if missing:
                sys.exit(f"hopper_fp8_grid: {PROFILE}: gemm grid axis {key} lacks {missing}")
    out = {}
    for m in axes["m"]:
        for n in axes["n"]:
            for k in axes["k"]:
                i, j, l = (bf16["m"].index(m), bf16["n"].index(n), bf16["k"].index(k))
                p, q, r = (fp8["m"].index(m), fp8["n"].index(n), fp8["k"].index(k))
                out[(m, n, k)] = fp8["tflops"][p][q][r] / bf16["tflops"][i][j][l]
    return out


# XLA's sweep ends at 4096, where FP8's gain is still rising (H200: 1.70x at 4096^3,
# 1.88x at 8192^3): the FP8 grid goes one doubling further, with BF16 read at the
# sweep's edge there, as the simulator reads any larger GEMM. Not 16384: a GEMM that
# large reaches the power limit within the harness's measurement (its 16384^3 ran
# throttled).
EXTRA = 8192


def fp8_axes(preset):
    """The preset's BF16 grid axes, each with EXTRA appended where it ends below it."""
    g = preset["gemm_grid"]
    return {key: g[key] + ([EXTRA] if g[key][-1] < EXTRA else []) for key in ("m", "n", "k")}


def fp8_grid(preset, ratios):
    g = preset["gemm_grid"]
    axes = fp8_axes(preset)

    def bf16(m, n, k):
        i, j, l = (g[key].index(min(x, g[key][-1])) for key, x in (("m", m), ("n", n), ("k", k)))
        return g["tflops"][(i * len(g["n"]) + j) * len(g["k"]) + l]

    values = [round(min(bf16(m, n, k) * ratios[(m, n, k)], preset["peak_fp8_tflops"]), 1)  # the reader's bound
              for m in axes["m"] for n in axes["n"] for k in axes["k"]]
    return {"m": axes["m"], "n": axes["n"], "k": axes["k"], "tflops": values}


SOURCE = ("the preset's BF16 gemm_grid (XLA's sm_90 sweep) times the FP8 E4M3 over BF16 throughput measured at the "
          "same (m, n, k) on one H200 SXM by trainsim-calibrate ({profile}, gemm.fp8 over gemm.bf16, cuBLASLt, boost "
          "clock; the same GH100 tensor cores); capped by gemm_fp8_max_tflops when timed "
          "(tools/calibrate/hopper_fp8_grid.py)")


def set_key(text, indent, value):
    """`text` with the line `"gemm_fp8_grid": value,` at `indent` spaces, in place of the one there or,
    when new, after the gemm_fp8_max_tflops line of that indent."""
    pad = " " * indent
    line = f'{pad}"gemm_fp8_grid": {value},'
    ours = re.compile(rf'^{pad}"gemm_fp8_grid": .*,$', flags=re.M)
    if ours.search(text):
        return ours.sub(lambda _: line, text, count=1)
    return re.sub(rf'^({pad}"gemm_fp8_max_tflops": [^\n]*,)$', lambda mo: mo.group(1) + "\n" + line, text, count=1,
                  flags=re.M)


def rewrite(text, grid):
    """The preset's text with gemm_fp8_grid set (after gemm_fp8_max_tflops when new) and its source line."""
    text = set_key(text, 2, json.dumps(grid, separators=(", ", ": ")))
    text = set_key(text, 4, json.dumps(SOURCE.format(profile=PROFILE)))
    json.loads(text)  # still JSON
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a preset differs")
    args = ap.parse_args()
    profile = json.loads((ROOT / PROFILE).read_text())
    stale = []
    for name in PRESETS:
        path = ROOT / "configs/hardware/gpus" / f"{name}.json"
        text = path.read_text()
        preset = json.loads(text)
        new = rewrite(text, fp8_grid(preset, ratio_grid(profile, fp8_axes(preset))))
        if new != text:
            stale.append(name)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        sys.exit(f"hopper_fp8_grid: out of date: {', '.join(stale)} (run tools/calibrate/hopper_fp8_grid.py)")
    print(("up to date" if args.check else "wrote") + f": {', '.join(PRESETS)}", file=sys.stderr)


if __name__ == "__main__":
    main()
