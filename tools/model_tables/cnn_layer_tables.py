#!/usr/bin/env python3
"""Writes the per-layer tables of models/vgg-16.json and models/resnet-50.json
from the architectures' convolution shapes, so that every number in them can be
reproduced:

    python3 tools/model_tables/cnn_layer_tables.py          # rewrite models/
    python3 tools/model_tables/cnn_layer_tables.py --check  # fail if they differ

Conventions (the same as the transformer workload's):
  * FLOPs count a multiply-add as 2 and cover the convolutions and fully
    connected layers only (ReLU, batch norm, pooling and residual adds are
    memory-bound and costed by the bytes they move, not by FLOPs).
  * Activations are FP16/BF16: 2 bytes per value.
  * ImageNet input, 3 x 224 x 224 (both papers' training crop).
  * Each convolution is also given as its implicit GEMM: m = output pixels per
    sample (times the batch at run time), n = output channels,
    k = input channels x kernel height x kernel width.

VGG-16 is configuration D of Simonyan & Zisserman 2014 (arXiv:1409.1556,
Table 1): thirteen 3x3 convolutions (stride 1, padding 1) in five groups each
ending in 2x2 max pooling, then fully connected layers of 4096, 4096 and 1000.
One table row per weight layer; a group's pooling is folded into its last
convolution, so that row's output is the pooled map.

ResNet-50 is the 50-layer network of He et al. 2015 (arXiv:1512.03385, Table 1):
a 7x7/2 convolution and 3x3/2 max pooling, then 3, 4, 6 and 3 bottleneck blocks
(1x1, 3x3, 1x1 convolutions, 4x expansion, batch norm after each, a 1x1
projection shortcut in each stage's first block), global average pooling and a
1000-way fully connected layer. The stride-2 of stages 3-5 sits on the 3x3
convolution (the "v1.5" placement of torchvision and NVIDIA's reference; the
paper puts it on the first 1x1, giving 3.8 G multiply-adds instead of 4.1 G).
One table row per bottleneck block (a block's shortcut keeps it a unit: the
rows form a chain), plus the stem and the classifier.

Cross-checks printed on every run (and asserted): parameters 138,357,544
(VGG-16) and 25,557,032 (ResNet-50), and 15.47 / 4.09 G multiply-adds per
image, the figures torchvision lists for these models (pytorch.org/vision,
models VGG16_Weights and ResNet50_Weights: "num_params", "GFLOPS", which
count multiply-adds).
"""

import argparse
import json
import pathlib
import sys

BYTES_PER_VALUE = 2  # FP16 / BF16 activations
IMAGE = (3, 224, 224)


class Net:
    """Walks an architecture, collecting one row per table layer."""

    def __init__(self):
        self.c, self.h, self.w = IMAGE
        self.rows = []
        self._open()

    def _open(self):
        self.flops = 0
        self.params = 0
        self.gemms = []

    def conv(self, out_c, kernel, stride=1, pad=None, bias=True, bn=False, from_shape=None):
        """A convolution on the current map (or on `from_shape` for a shortcut);
        returns the output shape without moving the current map."""
        c, h, w = from_shape or (self.c, self.h, self.w)
        if pad is None:
            pad = kernel // 2
        oh = (h + 2 * pad - kernel) // stride + 1
        ow = (w + 2 * pad - kernel) // stride + 1
        k = c * kernel * kernel
        m = oh * ow
        self.flops += 2 * m * out_c * k
        self.params += out_c * k + (out_c if bias else 0) + (2 * out_c if bn else 0)
        self.gemms.append([m, out_c, k])
        return out_c, oh, ow

    def move(self, shape):
        self.c, self.h, self.w = shape

    def pool(self, kernel, stride, pad=0):
        self.h = (self.h + 2 * pad - kernel) // stride + 1
        self.w = (self.w + 2 * pad - kernel) // stride + 1

    def fc(self, out_features):
        k = self.c * self.h * self.w
        self.flops += 2 * out_features * k
        self.params += out_features * k + out_features
        self.gemms.append([1, out_features, k])
        self.c, self.h, self.w = out_features, 1, 1

    def row(self, name):
        self.rows.append({
            "name": name,
            "flops_per_sample": self.flops,
            "params": self.params,
            "output_bytes_per_sample": self.c * self.h * self.w * BYTES_PER_VALUE,
            "gemms": self.gemms,
        })
        self._open()


def vgg16():
    n = Net()
    groups = [(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)]
    for g, (channels, convs) in enumerate(groups, start=1):
        for i in range(1, convs + 1):
            n.move(n.conv(channels, 3))
            if i == convs:
                n.pool(2, 2)
                n.row(f"conv{g}_{i}+pool")
            else:
                n.row(f"conv{g}_{i}")
    n.fc(4096)
    n.row("fc6")
    n.fc(4096)
    n.row("fc7")
    n.fc(1000)
    n.row("fc8")
    return n.rows


def resnet50():
    n = Net()
    n.move(n.conv(64, 7, stride=2, pad=3, bias=False, bn=True))
    n.pool(3, 2, pad=1)
    n.row("conv1+pool")
    stages = [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]
    for s, (width, blocks, stride) in enumerate(stages, start=2):
        for b in range(1, blocks + 1):
            block_in = (n.c, n.h, n.w)
            st = stride if b == 1 else 1
            n.move(n.conv(width, 1, bias=False, bn=True))
            n.move(n.conv(width, 3, stride=st, bias=False, bn=True))
            out = n.conv(4 * width, 1, bias=False, bn=True)
            if b == 1:  # projection shortcut: the block changes shape
                n.conv(4 * width, 1, stride=st, pad=0, bias=False, bn=True, from_shape=block_in)
            n.move(out)
            n.row(f"conv{s}_{b}")
    n.pool(n.h, n.h)  # global average pooling
    n.fc(1000)
    n.row("avgpool+fc")
    return n.rows


MODELS = {
    "vgg-16": {
        "build": vgg16,
        "name": "VGG-16",
        "expect_params": 138_357_544,
        "expect_gmacs": 15.47,
        "source": "Simonyan & Zisserman 2014, arXiv:1409.1556, Table 1 configuration D; ImageNet 224x224. "
                  "Generated by tools/model_tables/cnn_layer_tables.py from the convolution shapes; "
                  "FLOPs count a multiply-add as 2 (15.47 G multiply-adds per image, 138,357,544 "
                  "parameters, as torchvision's VGG16_Weights lists them).",
    },
    "resnet-50": {
        "build": resnet50,
        "name": "ResNet-50",
        "expect_params": 25_557_032,
        "expect_gmacs": 4.09,
        "source": "He et al. 2015, arXiv:1512.03385, Table 1 (50-layer, bottleneck blocks), stride on the 3x3 "
                  "convolution (v1.5); ImageNet 224x224. Generated by tools/model_tables/cnn_layer_tables.py "
                  "from the convolution shapes; FLOPs count a multiply-add as 2 (4.09 G multiply-adds per "
                  "image, 25,557,032 parameters, as torchvision's ResNet50_Weights lists them).",
    },
}


def document(key):
    spec = MODELS[key]
    rows = spec["build"]()
    params = sum(r["params"] for r in rows)
    gmacs = sum(r["flops_per_sample"] for r in rows) / 2 / 1e9
    if params != spec["expect_params"] or round(gmacs, 2) != spec["expect_gmacs"]:
        sys.exit(f"{key}: {params} parameters, {gmacs:.3f} G multiply-adds; expected "
                 f"{spec['expect_params']} and {spec['expect_gmacs']}")
    print(f"{key}: {len(rows)} layers, {params} parameters, {gmacs:.3f} G multiply-adds per image "
          f"({2 * gmacs:.2f} GFLOPs)", file=sys.stderr)
    return {
        "name": spec["name"],
        "arch": "layers",
        "input_bytes_per_sample": IMAGE[0] * IMAGE[1] * IMAGE[2] * BYTES_PER_VALUE,
        "source": spec["source"],
        "layers": rows,
    }


def render(doc):
    # One layer per line keeps the files short and their diffs readable.
    lines = ["{"]
    for key in ("name", "arch", "input_bytes_per_sample", "source"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(doc[key])},")
    lines.append('  "layers": [')
    for i, row in enumerate(doc["layers"]):
        comma = "," if i + 1 < len(doc["layers"]) else ""
        lines.append("    " + json.dumps(row, separators=(", ", ": ")) + comma)
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with models/ instead of writing")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parents[2] / "models"))
    args = parser.parse_args()
    status = 0
    for key in MODELS:
        path = pathlib.Path(args.out) / f"{key}.json"
        text = render(document(key))
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"{path} differs from what {pathlib.Path(__file__).name} generates", file=sys.stderr)
                status = 1
        else:
            path.write_text(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
