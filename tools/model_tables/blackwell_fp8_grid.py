#!/usr/bin/env python3
"""Writes the Blackwell GPU presets' gemm_fp8_grid from XLA's GEMM table.

XLA's interpolator data (xla/service/gpu/model/matmul_interpolator_data.h,
entry sm_100_B200) holds a B200's measured throughput at every (m, n, k) of
256..4096, batch 1, for BF16 (the presets' gemm_grid) and for FP8 E4M3 x E4M3
with BF16 output. This takes the FP8 points, as TFLOP/s to one decimal, into
the B200 preset, and the same times 2500 / 2250 (the peaks' ratio, as the
GB200's BF16 grid is the B200's) into the GB200 preset, so that FP8 GEMMs on
Blackwell are timed at their own shape's rate as BF16 ones are.

  python3 tools/model_tables/blackwell_fp8_grid.py XLA_HEADER           # rewrite the presets
  python3 tools/model_tables/blackwell_fp8_grid.py XLA_HEADER --check   # exit 1 if they differ

XLA_HEADER: the file above, from openxla/xla (the presets cite it as mirrored
in ROCm/xla at commit ea2c45f2ca). Only the grid's line and its source line
change; every other byte of a preset stays as it is.
"""
import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
KEY = "f8e4m3fnxf8e4m3fn->bf16"
SOURCE = ("FP8 E4M3 GEMM throughput by shape, XLA's matmul_interpolator_data.h, entry sm_100_B200, key "
          "f8e4m3fnxf8e4m3fn->bf16, batch 1, every (m, n, k) of 256..4096 (openxla/xla as mirrored in ROCm/xla at "
          "commit ea2c45f2ca; tools/model_tables/blackwell_fp8_grid.py writes it)")
PRESETS = {"B200-SXM-180GB": (1.0, SOURCE),
           "GB200-186GB": (2500 / 2250, "the B200 preset's FP8 grid scaled by 2500 / 2250, as its BF16 grid (derived; "
                                        "tools/model_tables/blackwell_fp8_grid.py writes it)")}


def b200_points(header):
    """(m, n, k) -> FP8 TFLOP/s of the sm_100_B200 entry at batch 1."""
    text = header.read_text()
    start = text.index('key: "sm_100_B200"')
    end = text.find('key: "sm_', start + 1)
    section = text[start:end if end >= 0 else len(text)]
    points = {}
    for b, m, n, k, body in re.findall(r"entries \{\s*b: (\d+)\s*m: (\d+)\s*n: (\d+)\s*k: (\d+)(.*?)\n\s*\}",
                                       section, re.S):
        if int(b) != 1:
            continue
        values = dict(re.findall(r'flops \{ key: "([^"]+)" value: (\d+) \}', body))
        if KEY in values:
            points[(int(m), int(n), int(k))] = float(values[KEY]) / 1e12
    if not points:
        sys.exit(f"blackwell_fp8_grid: {header}: no {KEY} points in entry sm_100_B200")
    return points


def grid_line(points, scale):
    axes = [sorted({p[i] for p in points}) for i in range(3)]
    tflops = []
    for m in axes[0]:
        for n in axes[1]:
            for k in axes[2]:
                if (m, n, k) not in points:
                    sys.exit(f"blackwell_fp8_grid: no point at m={m} n={n} k={k}")
                # The B200's figure as the preset writes it, then scaled: as the BF16 grids are.
                tflops.append(round(round(points[(m, n, k)], 1) * scale, 1))
    grid = {"m": axes[0], "n": axes[1], "k": axes[2], "tflops": tflops}
    return '  "gemm_fp8_grid": ' + json.dumps(grid) + ","


def rewrite(text, line, source):
    lines = text.split("\n")
    lines = [l for l in lines if not l.startswith('  "gemm_fp8_grid": ')]
    at = next(i for i, l in enumerate(lines) if l.startswith('  "gemm_fp8_max_tflops": '))
    lines.insert(at + 1, line)
    src = [i for i, l in enumerate(lines) if l.startswith('    "gemm_fp8_grid": ')]
    entry = '    "gemm_fp8_grid": ' + json.dumps(source) + ","
    if src:
        lines[src[0]] = entry
    else:
        at = next(i for i, l in enumerate(lines) if l.startswith('    "gemm_fp8_max_tflops": '))
        lines.insert(at + 1, entry)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("header", type=pathlib.Path, help="XLA's matmul_interpolator_data.h")
    parser.add_argument("--check", action="store_true", help="exit 1 if a preset differs from what would be written")
    args = parser.parse_args()
    points = b200_points(args.header)
    differ = False
    for name, (scale, source) in PRESETS.items():
        path = ROOT / "configs" / "hardware" / "gpus" / f"{name}.json"
        old = path.read_text()
        new = rewrite(old, grid_line(points, scale), source)
        json.loads(new)  # still JSON
        if new != old:
            differ = True
            if not args.check:
                path.write_text(new)
                print(f"wrote {path.relative_to(ROOT)}")
    if args.check and differ:
        sys.exit("blackwell_fp8_grid: a preset's gemm_fp8_grid differs from XLA's table")


if __name__ == "__main__":
    main()
