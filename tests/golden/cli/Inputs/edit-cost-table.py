# edit-cost-table.py IN OUT EDIT... -- writes a copy of the cost table IN (JSON,
# as netc calibrate writes it) with each EDIT applied, for tests of the cost
# model's limits and of damaged tables. PATH is dotted keys and list indices,
# e.g. profiles.1.ops.convolution.rate:
#   PATH=JSON     set PATH to the JSON value (a number, a string in quotes, ...)
#   del:PATH      remove PATH
import json
import sys

source, target, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
table = json.load(open(source))


def parent_of(path):
    keys = path.split(".")
    node = table
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = keys[-1]
    return node, int(last) if isinstance(node, list) else last


for edit in edits:
    if edit.startswith("del:"):
        node, key = parent_of(edit[4:])
        del node[key]
    elif "=" in edit:
        path, value = edit.split("=", 1)
        node, key = parent_of(path)
        node[key] = json.loads(value)
    else:
        sys.exit("unknown edit " + edit)
with open(target, "w") as out:
    json.dump(table, out, indent=2)
    out.write("\n")
