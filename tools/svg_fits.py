#!/usr/bin/env python3
"""Checks that an SVG draws nothing outside its canvas, through a real renderer.

Each file is rendered by librsvg's rsvg-convert twice more, with its canvas
moved onto the strip just beyond its right edge and onto the strip just below
its bottom (the viewBox changed; everything else as it is). A pixel painted
in either is something the picture draws beyond its own edge (text cut at
the right edge, a legend below the bottom). Exits 1 naming the file and the
edge, 0 when every file fits.

    usage: tools/svg_fits.py FILE.svg [FILE.svg ...]     (RSVG_CONVERT=path, default rsvg-convert)
"""
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

MARGIN = 600  # px looked at beyond the right and the bottom edge


def painted(png: bytes) -> bool:
    """Whether an 8-bit RGBA PNG paints any pixel. Its rows are stored filtered
    (each byte a difference from its neighbours), but an image with every
    pixel clear stores nothing but zeros, and one with any pixel painted does
    not: so the decompressed bytes, less each row's filter byte, tell."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, _, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour != 6 or interlace != 0:
                raise ValueError("expected 8-bit RGBA without interlacing")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * 4 + 1
    return any(raw[y * stride + 1:(y + 1) * stride].strip(b"\x00") for y in range(len(raw) // stride))


def strip(svg: str, x: float, y: float, w: float, h: float) -> str:
    """The SVG with its canvas moved onto the region (x, y, w, h) of its drawing."""
    head = re.search(r"<svg\b[^>]*>", svg)
    tag = re.sub(r'\s(width|height|viewBox)="[^"]*"', "", head.group(0))
    tag = tag.replace("<svg", f'<svg width="{w:g}" height="{h:g}" viewBox="{x:g} {y:g} {w:g} {h:g}"', 1)
    return svg[:head.start()] + tag + svg[head.end():]


def size(svg: str):
    head = re.search(r"<svg\b[^>]*>", svg)
    if not head:
        raise ValueError("no <svg> element")
    tag = head.group(0)
    box = re.search(r'viewBox="\s*[-0-9.]+[ ,]+[-0-9.]+[ ,]+([0-9.]+)[ ,]+([0-9.]+)\s*"', tag)
    if box:
        return float(box.group(1)), float(box.group(2))
    return (float(re.search(r'\bwidth="([0-9.]+)"', tag).group(1)),
            float(re.search(r'\bheight="([0-9.]+)"', tag).group(1)))


def render(svg: str, rsvg: str) -> bytes:
    with tempfile.NamedTemporaryFile("w", suffix=".svg", delete=False, encoding="utf-8") as f:
        f.write(svg)
        name = f.name
    try:
        return subprocess.run([rsvg, name], check=True, capture_output=True).stdout
    finally:
        os.unlink(name)


def check(path: str, rsvg: str) -> str:
    with open(path, encoding="utf-8") as f:
        svg = f.read()
    w, h = size(svg)
    # One pixel of slack at each edge, for antialiasing.
    out = []
    if painted(render(strip(svg, w + 1, 0, MARGIN, h + MARGIN), rsvg)):
        out.append("right")
    if painted(render(strip(svg, 0, h + 1, w + 1, MARGIN), rsvg)):
        out.append("bottom")
    return f"{path}: drawn beyond the {' and the '.join(out)} edge of its {w:g} x {h:g} canvas" if out else ""


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    if sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    rsvg = os.environ.get("RSVG_CONVERT", "rsvg-convert")
    try:
        bad = [m for m in (check(p, rsvg) for p in sys.argv[1:]) if m]
    except OSError as e:
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except (ValueError, AttributeError) as e:
        print(f"error: not an SVG this check reads ({e})", file=sys.stderr)
        return 2
    for m in bad:
        print(m, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
