# mnist-image.py IMAGES INDEX FORMAT:OUT... -- writes image INDEX of an IDX
# images file (e.g. the MNIST slice's t10k-images-idx3-ubyte) as predict
# inputs, one file per FORMAT:OUT: p5 (binary PGM), p2 (text PGM), png (8-bit
# grey PNG), csv (one row of pixels) or csv-label (the same after a label
# column, 7). `blank:WxH` instead of IMAGES: a black W x H image.
import struct
import sys
import zlib


def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


source, index = sys.argv[1], int(sys.argv[2])
if source.startswith("blank:"):
    width, height = map(int, source[len("blank:"):].split("x"))
    pixels = bytes(width * height)
else:
    data = open(source, "rb").read()
    count, height, width = struct.unpack(">III", data[4:16])
    assert data[:4] == b"\x00\x00\x08\x03" and index < count
    pixels = data[16 + index * width * height:16 + (index + 1) * width * height]
rows = [pixels[r * width:(r + 1) * width] for r in range(height)]

for target in sys.argv[3:]:
    form, out = target.split(":", 1)
    if form == "p5":
        open(out, "wb").write(b"P5\n%d %d\n255\n" % (width, height) + pixels)
    elif form == "p2":
        text = "\n".join(" ".join(str(p) for p in row) for row in rows)
        open(out, "w").write("P2\n# a digit\n%d %d\n255\n%s\n" % (width, height, text))
    elif form == "png":
        header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grey
        raw = b"".join(b"\x00" + row for row in rows)  # filter 0 on every row
        open(out, "wb").write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) +
                              png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b""))
    elif form in ("csv", "csv-label"):
        open(out, "w").write(("7," if form == "csv-label" else "") + ",".join(map(str, pixels)) + "\n")
    else:
        sys.exit("unknown format " + form)
