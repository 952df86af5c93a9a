"""Checks the JSON of `netc show` for the seed network (127,495 parameters, docs/language.md §15)."""
import json
import sys

d = json.load(open(sys.argv[1]))
assert d["params"] == 127495, d["params"]
layers = d["layers"]
assert [l["name"] for l in layers] == ["Pic", "Conv1", "Conv2", "Hid3", "Digit"]
assert [l["kind"] for l in layers] == ["input", "hidden", "hidden", "hidden", "output"]
assert [l["shape"] for l in layers] == [[784], [5, 13, 13], [50, 5, 5], [100], [10]]
assert [l["nodes"] for l in layers] == [784, 845, 1250, 100, 10]
assert [l["function"] for l in layers] == [None, "sigmoid", "sigmoid", "sigmoid", "softmax"]
assert [l["params"] for l in layers] == [0, 85, 1300, 125100, 1010]
assert layers[2]["bundles"] == [{"from": "Conv1", "kind": "convolve", "params": 1300, "flops": 63750}], layers[2]
for l in layers:
    for key in ("name", "kind", "shape", "nodes", "function", "params", "bundles"):
        assert key in l, (key, l)
