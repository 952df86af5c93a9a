# blank-idx.py DIR COUNT HEIGHT WIDTH -- writes DIR/train-images-idx3-ubyte
# (COUNT black HEIGHT x WIDTH images) and DIR/train-labels-idx1-ubyte
# (labels 0, 1, 0, 1, ...): a data folder of any image size for tests.
import os
import struct
import sys

folder, count, height, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, "train-images-idx3-ubyte"), "wb") as images:
    images.write(struct.pack(">IIII", 0x803, count, height, width) + bytes(count * height * width))
with open(os.path.join(folder, "train-labels-idx1-ubyte"), "wb") as labels:
    labels.write(struct.pack(">II", 0x801, count) + bytes(i % 2 for i in range(count)))
