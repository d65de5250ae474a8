#!/usr/bin/env python3
"""Measures, through PyTorch, what the CUDA harness (trainsim-calibrate) cannot:

  burn       BF16 and FP8 GEMMs of 8192^3 back to back for --burn-s seconds each, on
             normally distributed data, with the SM clock, power and throttle reasons
             read from nvidia-smi every 0.5 s: what a long run of GEMMs sustains,
             against its best window.
  burn_uniform_u32  the BF16 burn on huggingface/gpu-fryer's data (uniform 32-bit
             unsigned integers as floats), to compare with its published figures.
  mixed      the GEMMs about 65% of the time with HBM copies between, as a training
             step interleaves them: the GEMMs' own throughput and the clock.
  attention  torch's fused scaled-dot-product attention (FlashAttention-2, cuDNN and
             memory-efficient back ends), causal, forward and forward + backward,
             BF16, at FlashAttention-2's benchmark shapes (16k tokens a batch,
             hidden 2048, head dims 64 and 128) and sequence 512 ... 16384, idling
             after each measurement (boost clock).
  fp8        torch._scaled_mm as float8 training calls it (tensorwise and rowwise
             scales, BF16 out) beside BF16 at the linear layers' forward shapes of
             Llama 3 8B, 70B and 405B (8192 tokens, tp 1 and 8), back to back; plus
             eager casts to FP8 with their amax.
  fp8_passes the same layers' forward, input-gradient and weight-gradient shapes,
             BF16 and FP8 (tensorwise, rowwise; with and without fast accumulation),
             idling after each measurement so that each starts at the boost clock
             (a GEMM of tens of milliseconds, as Llama 3 405B's MLP at tp 1, still
             reaches the power limit within its own measurement).
  elementwise  eager element-wise kernels at a layer's activation size
             (8192 x 8192 BF16): copy, add, SiLU-and-multiply, RMSNorm forward,
             their bytes over their time.
  host       the host's own cost of an eager op: the wall time of issuing a few
             hundred small ops (add, linear, top-k, index_select, a dtype cast)
             while a sleeping kernel keeps the GPU busy, so that none waits for
             the GPU; and a device-to-host read's round trip (.item()) on an
             idle GPU: what a run whose kernels are shorter than their launch
             loses to the host.

Writes one JSON document (--out). Times are CUDA-event medians after warm-up
calls. Needs one NVIDIA GPU and PyTorch; FP8 parts need compute capability
8.9 or newer and are skipped otherwise.
"""
import argparse
import json
import statistics
import subprocess
import sys
import threading
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --help still answers; measuring says what is missing
    torch = None


def event_ms(fn, warmup=3, samples=10, reps=None):
    """Median, min and max milliseconds per call of fn, CUDA events around
    `reps` back-to-back calls (chosen so a sample lasts about 5 ms)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    if reps is None:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        once = max(start.elapsed_time(stop), 1e-3)
        reps = max(1, min(1000, int(5.0 / once)))
    out = []
    for _ in range(samples):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        out.append(start.elapsed_time(stop) / reps)
    return {"median": statistics.median(out), "min": min(out), "max": max(out)}


def cooled(fn):
    """event_ms with fewer samples, then idle twice as long as it took: a GPU at its power
    limit lowers its clock within a second of tensor-core work, so measurements back to
    back drift from the boost clock to the limited one; idling keeps every one at boost."""
    t0 = time.monotonic()
    ms = event_ms(fn, warmup=2, samples=5)
    time.sleep(2 * (time.monotonic() - t0))
    return ms


def tflops(flop, ms):
    """TFLOP/s of `flop` work from event_ms's milliseconds (the slowest sample gives the minimum)."""
    rate = lambda t: flop / (t * 1e-3) / 1e12
    return {"median": rate(ms["median"]), "min": rate(ms["max"]), "max": rate(ms["min"])}


class SmiLog:
    """nvidia-smi read every 0.5 s in a thread: SM clock, power, temperature, throttle reasons."""

    FIELDS = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"

    def __init__(self):
        try:
            probe = subprocess.run(["nvidia-smi", "-i", "0", f"--query-gpu={self.FIELDS}", "--format=csv,noheader"],
                                   capture_output=True, text=True)
            if probe.returncode != 0:  # an older driver names the throttle reasons otherwise
                SmiLog.FIELDS = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active"
        except OSError:  # no nvidia-smi: the timings stand without the clock beside them
            pass
        self.rows, self._stop = [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        t0 = time.monotonic()
        while not self._stop.is_set():
            try:
                text = subprocess.run(["nvidia-smi", "-i", "0", f"--query-gpu={self.FIELDS}",
                                       "--format=csv,noheader,nounits"], capture_output=True, text=True,
                                      timeout=5).stdout.strip()
                self.rows.append([round(time.monotonic() - t0, 2)] + [x.strip() for x in text.split(",")])
            except (OSError, subprocess.SubprocessError):
                pass
            self._stop.wait(0.5)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def to_fp8(x):
    """Tensorwise current scaling: scale so the amax lands on E4M3's largest value (448)."""
    amax = x.abs().max().float().clamp(min=1e-12)
    scale = 448.0 / amax
    return (x.float() * scale).to(torch.float8_e4m3fn), (1.0 / scale).reshape(())


def operands(n, data):
    """Two n x n BF16 matrices: `normal` (N(0, 1), like trained weights and activations) or
    `uniform-u32` (uniform 32-bit unsigned integers as floats, as huggingface/gpu-fryer fills
    its matrices: one sign and few exponents, so fewer bits toggle)."""
    if data == "normal":
        return (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    return (torch.randint(0, 2**32, (n, n), device="cuda", dtype=torch.int64).float().to(torch.bfloat16)
            for _ in range(2))


def timed_windows(seconds, fn, calls, flop, between=lambda: None):
    """For `seconds`: windows of `calls` back-to-back calls of fn timed by CUDA events, then
    `between` (untimed work), while nvidia-smi is read. Returns [[t_s, TFLOP/s], ...] and the
    nvidia-smi rows."""
    windows = []
    with SmiLog() as smi:
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            stop.record()
            between()
            torch.cuda.synchronize()
            windows.append([round(time.monotonic() - t0, 3), calls * flop / (start.elapsed_time(stop) * 1e-3) / 1e12])
    return windows, smi.rows


def to_fp8_rowwise(x):
    """Rowwise scaling: one scale per row, so that each row's amax lands on E4M3's 448. Returns the
    FP8 tensor and its scales, [rows, 1] in FP32."""
    scale = (x.abs().amax(dim=1, keepdim=True).float() / 448.0).clamp(min=1e-12)
    return (x.float() / scale).to(torch.float8_e4m3fn), scale


def burn(seconds, data="normal", fp8=True):
    n = 8192
    flop = 2.0 * n * n * n
    a, b = operands(n, data)
    kinds = {"bf16": lambda: a @ b}
    if fp8 and torch.cuda.get_device_capability() >= (8, 9):
        a8, sa = to_fp8(a)
        b8, sb = to_fp8(b)
        b8t = b8.t().contiguous().t()  # column-major second operand, as _scaled_mm wants
        kinds["fp8_tensorwise"] = lambda: torch._scaled_mm(a8, b8t, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    out = {}
    for name, fn in kinds.items():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        time.sleep(5)  # let the GPU cool to its idle state between kinds
        per_window, smi_rows = timed_windows(seconds, fn, 20, flop)
        first = [r for t, r in per_window if t <= 1.0]
        last = [r for t, r in per_window if t >= seconds / 2]
        out[name] = {
            "m": n, "n": n, "k": n, "seconds": seconds, "data": data,
            "first_second_tflops": round(statistics.median(first), 1) if first else None,
            "best_window_tflops": max(r for _, r in per_window),
            "second_half_median_tflops": round(statistics.median(last), 1) if last else None,
            "windows": per_window,
            "smi_fields": ["t_s"] + SmiLog.FIELDS.split(","),
            "smi": smi_rows,
        }
        print(f"  burn {name}: first second {out[name]['first_second_tflops']}, "
              f"second half {out[name]['second_half_median_tflops']} TFLOP/s", file=sys.stderr)
    return out


def mixed(seconds, gemm_share=0.65):
    """GEMMs of 8192^3 on normal data alternating with HBM-bound copies so that GEMMs take about
    `gemm_share` of the time, as in a training step: the GEMMs' own throughput (events around
    them alone) and the clock, to see whether a burn's sustained clock holds when the tensor
    cores rest part of the time."""
    n = 8192
    flop = 2.0 * n * n * n
    a, b = operands(n, "normal")
    src = torch.randn(512 * 2**20, device="cuda", dtype=torch.bfloat16)  # 1 GiB
    dst = torch.empty_like(src)
    gemm_ms = event_ms(lambda: a @ b)["median"]
    copy_ms = event_ms(lambda: dst.copy_(src))["median"]
    gemms = 10
    copies = max(1, round(gemms * gemm_ms * (1 - gemm_share) / gemm_share / copy_ms))

    def copy_between():
        for _ in range(copies):
            dst.copy_(src)
    windows, smi_rows = timed_windows(seconds, lambda: a @ b, gemms, flop, copy_between)
    last = [r for t, r in windows if t >= seconds / 2]
    result = {"m": n, "n": n, "k": n, "seconds": seconds, "gemm_share_asked": gemm_share,
              "gemms_per_cycle": gemms, "copies_per_cycle": copies, "copy_bytes": 2 * src.numel() * 2,
              "second_half_median_gemm_tflops": round(statistics.median(last), 1) if last else None,
              "windows": windows, "smi_fields": ["t_s"] + SmiLog.FIELDS.split(","), "smi": smi_rows}
    print(f"  mixed: GEMMs at {result['second_half_median_gemm_tflops']} TFLOP/s in the second half",
          file=sys.stderr)
    return result


def attention(tokens=16384, hidden=2048):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    points = []
    for d in (64, 128):
        for seq in (512, 1024, 2048, 4096, 8192, 16384):
            b, h = tokens // seq, hidden // d
            q, k, v = (torch.randn(b, h, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            dout = torch.randn(b, h, seq, d, device="cuda", dtype=torch.bfloat16)
            # FLOPs as FlashAttention-2 counts causal work: forward 4 b h s^2 d / 2, backward 2.5x.
            fwd_flop = 4.0 * b * h * seq * seq * d / 2
            for name, backend in backends.items():
                try:
                    with sdpa_kernel([backend]):
                        def fwd():
                            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

                        def fwd_bwd():
                            q.grad = k.grad = v.grad = None  # no accumulating adds in the timing
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                            o.backward(dout)
                        f_ms = cooled(fwd)
                        fb_ms = cooled(fwd_bwd)
                except RuntimeError as e:
                    points.append({"backend": name, "batch": b, "heads": h, "seq": seq, "head_dim": d,
                                   "error": str(e).splitlines()[0][:200]})
                    continue
                bwd = fb_ms["median"] - f_ms["median"]
                p = {"backend": name, "batch": b, "heads": h, "seq": seq, "head_dim": d,
                     "forward_ms": f_ms, "forward_backward_ms": fb_ms,
                     "forward_tflops": fwd_flop / (f_ms["median"] * 1e-3) / 1e12,
                     "backward_tflops": 2.5 * fwd_flop / (bwd * 1e-3) / 1e12 if bwd > 0 else None,
                     "forward_backward_tflops": 3.5 * fwd_flop / (fb_ms["median"] * 1e-3) / 1e12}
                points.append(p)
                print(f"  attention {name} d={d} s={seq}: fwd {p['forward_tflops']:.0f}, "
                      f"fwd+bwd {p['forward_backward_tflops']:.0f} TFLOP/s", file=sys.stderr)
            del q, k, v, dout
    return {"causal": True, "dtype": "bf16", "tokens": tokens, "hidden": hidden,
            "flop_convention": "FlashAttention-2: causal forward 2 b h s^2 d, backward 2.5 times that",
            "points": points}


def fp8_shapes():
    # (model, op, n, k) of Llama 3's linear layers (public configs: 8B h 4096 ffn 14336 kv 8;
    # 70B h 8192 ffn 28672 kv 8; 405B h 16384 ffn 53248 kv 8; head dim 128), at tp 1 and 8.
    models = {"llama3-8b": (4096, 14336, 32, 8), "llama3-70b": (8192, 28672, 64, 8),
              "llama3-405b": (16384, 53248, 128, 8)}
    tokens = 8192
    rows = []
    fp8 = torch.cuda.get_device_capability() >= (8, 9)
    for model, (h, ffn, heads, kv) in models.items():
        for tp in (1, 8):
            ops = {"wq": (h // tp, h), "wkv": (2 * kv * 128 // tp, h), "wo": (h, h // tp),
                   "w13": (2 * ffn // tp, h), "w2": (h, ffn // tp)}
            for op, (n, k) in ops.items():
                m = tokens
                x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
                flop = 2.0 * m * n * k
                row = {"model": model, "tp": tp, "op": op, "m": m, "n": n, "k": k,
                       "bf16_tflops": tflops(flop, event_ms(lambda: x @ w.t()))["median"]}
                if fp8:
                    x8, sx = to_fp8(x)
                    w8, sw = to_fp8(w)
                    row["fp8_tensorwise_tflops"] = tflops(flop, event_ms(
                        lambda: torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16)))["median"]
                    # Rowwise: one scale per row of x and per output column (torchao's rowwise recipe).
                    xr, sxr = to_fp8_rowwise(x)
                    wr, swr = to_fp8_rowwise(w)
                    try:
                        row["fp8_rowwise_tflops"] = tflops(flop, event_ms(
                            lambda: torch._scaled_mm(xr, wr.t(), scale_a=sxr, scale_b=swr.reshape(1, -1).contiguous(),
                                                     out_dtype=torch.bfloat16)))["median"]
                    except RuntimeError as e:
                        row["fp8_rowwise_error"] = str(e).splitlines()[0][:200]
                rows.append(row)
                print(f"  {model} tp{tp} {op} {m}x{n}x{k}: " + ", ".join(
                    f"{key} {val:.0f}" for key, val in row.items() if key.endswith("tflops")), file=sys.stderr)
                del x, w
    casts = []
    if fp8:
        for shape in ((8192, 4096), (8192, 16384), (16384, 53248)):
            x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16)
            amax_ms = event_ms(lambda: x.abs().max())
            cast_ms = event_ms(lambda: to_fp8(x))
            casts.append({"shape": list(shape), "bytes_bf16": x.numel() * 2, "amax_ms": amax_ms,
                          "amax_and_cast_ms": cast_ms})
            del x
    return {"tokens": 8192, "gemms": rows, "tensorwise_casts_eager": casts}


def fp8_passes():
    """Each linear layer's three GEMMs (forward, input gradient, weight gradient) of Llama 3
    8B, 70B and 405B at 8192 tokens, tp 1 and 8, through torch._scaled_mm as torchao's
    Float8Linear calls it, beside BF16: tensorwise and rowwise scales, each with and without
    fast accumulation (torchao: fast for the forward, not for the gradients). After every
    measurement the GPU idles twice as long, so that all run at the boost clock."""
    models = {"llama3-8b": (4096, 14336, 8), "llama3-70b": (8192, 28672, 8), "llama3-405b": (16384, 53248, 8)}
    tokens = 8192
    rows = []

    for model, (h, ffn, kv) in models.items():
        for tp in (1, 8):
            linears = {"wq": (h // tp, h), "wkv": (2 * kv * 128 // tp, h), "wo": (h, h // tp),
                       "w13": (2 * ffn // tp, h), "w2": (h, ffn // tp)}
            for op, (out_f, in_f) in linears.items():
                # (M, N, K) of out[M, N] = A[M, K] @ B[K, N].
                passes = {"F": (tokens, out_f, in_f), "I": (tokens, in_f, out_f), "W": (out_f, in_f, tokens)}
                for pass_name, (m, n, k) in passes.items():
                    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)  # used as b.t(): column-major [K, N]
                    flop = 2.0 * m * n * k
                    row = {"model": model, "tp": tp, "op": op, "pass": pass_name, "m": m, "n": n, "k": k,
                           "bf16": flop / (cooled(lambda: a @ b.t())["median"] * 1e-3) / 1e12}
                    a8, sa = to_fp8(a)
                    b8, sb = to_fp8(b)
                    ar, sar = to_fp8_rowwise(a)
                    br, sbr = to_fp8_rowwise(b)
                    sbr_row = sbr.reshape(1, -1).contiguous()
                    for fast in (True, False):
                        tag = "fast" if fast else "exact"
                        for scaling, (x, y, sx, sy) in {"tensorwise": (a8, b8, sa, sb),
                                                        "rowwise": (ar, br, sar, sbr_row)}.items():
                            try:
                                ms = cooled(lambda: torch._scaled_mm(x, y.t(), scale_a=sx, scale_b=sy,
                                                                     out_dtype=torch.bfloat16,
                                                                     use_fast_accum=fast))["median"]
                                row[f"{scaling}_{tag}"] = flop / (ms * 1e-3) / 1e12
                            except RuntimeError as e:
                                row[f"{scaling}_{tag}_error"] = str(e).splitlines()[0][:200]
                    rows.append(row)
                    print(f"  {model} tp{tp} {op} {pass_name} {m}x{n}x{k}: " + ", ".join(
                        f"{key} {val:.0f}" for key, val in row.items() if isinstance(val, float)), file=sys.stderr)
                    del a, b, a8, b8, ar, br
    return {"tokens": tokens, "unit": "TFLOP/s", "gemms": rows}


def elementwise():
    n = 8192 * 8192
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    y = torch.randn_like(x)
    g = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
    xx = torch.randn(8192, 2 * 8192, device="cuda", dtype=torch.bfloat16)
    ops = {
        "copy": (lambda: x.clone(), 2 * n * 2),
        "add": (lambda: x + y, 3 * n * 2),
        "silu_mul": (lambda: F.silu(xx[:, :8192]) * xx[:, 8192:], 3 * n * 2),  # eager: two kernels
        "rms_norm": (lambda: F.rms_norm(x, (8192,), g, 1e-5), 2 * n * 2),
    }
    out = {}
    for name, (fn, bytes_) in ops.items():
        ms = event_ms(fn)
        out[name] = {"ms": ms, "bytes_counted": bytes_, "tb_per_s": bytes_ / (ms["median"] * 1e-3) / 1e12}
        print(f"  elementwise {name}: {out[name]['tb_per_s']:.2f} TB/s", file=sys.stderr)
    return out


def host(ops=200):
    """Microseconds of host time an eager op takes to issue (median of 5 rounds of `ops` calls each,
    the GPU busy with torch.cuda._sleep throughout so that nothing waits for it), and of a
    device-to-host read of one value (.item(), median of 50 on an idle GPU)."""
    x = torch.randn(1024, device="cuda")
    a = torch.randn(16, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    scores = torch.randn(4096, 128, device="cuda")
    index = torch.randint(0, 4096, (4096,), device="cuda")
    calls = {
        "add": lambda: x.add_(1.0),
        "linear": lambda: F.linear(a, w),
        "topk": lambda: torch.topk(scores, 8, dim=-1),
        "index_select": lambda: scores.index_select(0, index),
        "cast": lambda: a.float(),
    }
    # Cycles to keep the GPU busy well past the issuing: about 2 GHz x (ops x 50 us).
    cycles = int(2e9 * ops * 50e-6)
    out = {"ops_per_round": ops, "per_op_us": {}}
    for name, fn in calls.items():
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        rounds = []
        for _ in range(5):
            torch.cuda._sleep(cycles)
            t0 = time.perf_counter()
            for _ in range(ops):
                fn()
            rounds.append((time.perf_counter() - t0) / ops * 1e6)
            torch.cuda.synchronize()
        out["per_op_us"][name] = {"median": statistics.median(rounds), "min": min(rounds), "max": max(rounds)}
        print(f"  host {name}: {out['per_op_us'][name]['median']:.1f} us an op", file=sys.stderr)
    reads = []
    for _ in range(50):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        x[0].item()
        reads.append((time.perf_counter() - t0) * 1e6)
    out["item_us"] = {"median": statistics.median(reads), "min": min(reads), "max": max(reads)}
    print(f"  host .item(): {out['item_us']['median']:.1f} us", file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--burn-s", type=float, default=30.0, help="seconds of each burn (default 30)")
    ap.add_argument("--only", nargs="*", choices=["burn", "burn_uniform_u32", "mixed", "attention", "fp8",
                                                  "fp8_passes", "elementwise", "host"],
                    help="sections to run (default all)")
    args = ap.parse_args()
    if torch is None:
        sys.exit("framework_probe: needs PyTorch with CUDA (import torch failed)")
    if not torch.cuda.is_available():
        sys.exit("framework_probe: no CUDA device visible")
    props = torch.cuda.get_device_properties(0)
    doc = {"tool": "tools/calibrate/framework_probe.py", "gpu_name": props.name,
           "compute_capability": "%d.%d" % torch.cuda.get_device_capability(), "sm_count": props.multi_processor_count,
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        doc["power_limit"] = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=power.limit,clocks.max.sm,clocks.max.mem",
                                             "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    sections = args.only or ["host", "elementwise", "fp8", "fp8_passes", "attention", "burn", "burn_uniform_u32",
                             "mixed"]
    for name in sections:
        t0 = time.monotonic()
        print(f"[{name}] ...", file=sys.stderr)
        try:
            doc[name] = {"host": host, "elementwise": elementwise, "fp8": fp8_shapes, "fp8_passes": fp8_passes,
                         "attention": attention,
                         "burn": lambda: burn(args.burn_s),
                         "burn_uniform_u32": lambda: burn(args.burn_s, "uniform-u32", fp8=False),
                         "mixed": lambda: mixed(args.burn_s)}[name]()
        except Exception as e:  # keep the other sections' figures
            doc[name] = {"error": f"{type(e).__name__}: {e}"[:500]}
            print(f"[{name}] failed: {e}", file=sys.stderr)
        print(f"[{name}] {time.monotonic() - t0:.1f} s", file=sys.stderr)
        torch.cuda.empty_cache()
        with open(args.out, "w") as f:  # after every section: a killed run keeps what it measured
            json.dump(doc, f, indent=1)
    print(f"framework_probe: wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
