# eval-consistency.py -- checks that `netc eval --format json` agrees with
# itself and with the training run's metrics.jsonl (see eval-json.test).
import json
import sys

e = json.load(open(sys.argv[1]))
lines = [json.loads(line) for line in open(sys.argv[2])]
end = [m for m in lines if m["event"] == "end"][-1]
best = [m for m in lines if m["event"] == "epoch" and m["epoch"] == end["best_epoch"]][-1]

confusion = e["confusion"]
assert len(confusion) == 10 and all(len(row) == 10 for row in confusion), confusion
assert sum(map(sum, confusion)) == e["samples"] == 100, confusion
trace = sum(confusion[c][c] for c in range(10))
assert abs(e["accuracy"] - trace / e["samples"]) < 1e-9, (e["accuracy"], trace)
for c, row in enumerate(confusion):
    assert abs(e["class_accuracy"][c] - row[c] / sum(row)) < 1e-9, (c, e["class_accuracy"][c], row)
assert abs(e["accuracy"] - best["test_accuracy"]) < 1e-9, (e["accuracy"], best)
assert abs(e["loss"] - best["test_loss"]) <= 1e-4 * max(1.0, best["test_loss"]), (e["loss"], best)
print("consistent")
