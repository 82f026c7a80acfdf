"""Checks a screenshot of report.html is not blank and shows the plot.

usage: check_png.py SCREENSHOT.png X,Y,W,H

Decodes the PNG (8-bit RGB or RGBA, non-interlaced, as Chromium writes them)
with the standard library, then checks that the whole image has many colours
and that the plot rectangle X,Y,W,H (CSS pixels, device scale 1) contains the
forward (blue), backward (orange) and origin (red) colours of the plot.
Prints what is wrong and exits 1, or prints "ok" and the colour counts.
"""
import struct
import sys
import zlib

FORWARD = (0x1F, 0x77, 0xB4)
BACKWARD = (0xFF, 0x7F, 0x0E)
ORIGIN = (0xD6, 0x27, 0x28)


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("not a PNG")
    pos, idat = 8, []
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    if depth != 8 or color not in (2, 6) or interlace:
        raise SystemExit(f"unsupported PNG: depth {depth} colour type {color} interlace {interlace}")
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 0xFF
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def main():
    path = sys.argv[1]
    x, y, w, h = (int(v) for v in sys.argv[2].split(","))
    width, height, bpp, rows = decode(path)
    errors = []
    every = set()
    for line in rows[::4]:
        for i in range(0, len(line), bpp * 4):
            every.add(bytes(line[i:i + 3]))
    if len(every) < 16:
        errors.append(f"image looks blank: {len(every)} colours")
    region = set()
    for yy in range(max(0, y), min(height, y + h)):
        line = rows[yy]
        for xx in range(max(0, x), min(width, x + w)):
            region.add(bytes(line[xx * bpp:xx * bpp + 3]))
    for name, rgb in (("forward", FORWARD), ("backward", BACKWARD), ("origin", ORIGIN)):
        if bytes(rgb) not in region:
            errors.append(f"no {name} colour #{bytes(rgb).hex()} in the plot rectangle {x},{y},{w},{h}")
    if len(region) < 8:
        errors.append(f"plot rectangle nearly uniform: {len(region)} colours")
    if errors:
        print("\n".join(errors))
        return 1
    print(f"ok: {width}x{height}, {len(every)} colours sampled, {len(region)} in the plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
