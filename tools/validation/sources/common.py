"""What every source's conversion shares: the checkout, the model and node presets, the shape check."""

from __future__ import annotations

import json
from pathlib import Path


REPO = Path(__file__).resolve().parents[3]
RUNS_NAME = "shared/validation/published-runs.json"

# One bucket holding a whole stage's gradients: the largest parallel.grad_bucket_mib
# the loader accepts (10^6 MiB), above any stage's gradient size in these cases.
ONE_BUCKET_MIB = 1000000

# PyTorch's FSDP (FSDP1: fms-fsdp, Composer under llm-foundry) under mixed precision.
FSDP1_SHARDS = ("fp32: PyTorch's FSDP keeps each unit's sharded flat parameter in the model's FP32 and casts it to "
                "bf16 as the unit is gathered (MixedPrecision's param_dtype); the optimizer steps the FP32 shard, its "
                "gradient cast back to FP32 after the reduce-scatter")


def load_preset(name: str) -> dict:
    return json.loads((REPO / "models" / f"{name}.json").read_text())


def load_node(name: str) -> dict:
    return json.loads((REPO / "configs" / "hardware" / "nodes" / f"{name}.json").read_text())


def check_shape(preset: str, model: dict, record_id: str) -> None:
    """The preset must have the record's shape (keys the record gives)."""
    p = load_preset(preset)
    for key in ("layers", "hidden", "heads", "ffn", "seq", "vocab"):
        if model.get(key) is not None and model[key] != p[key]:
            raise SystemExit(f"{record_id}: model preset {preset} has {key} = {p[key]}, the record {model[key]}")
