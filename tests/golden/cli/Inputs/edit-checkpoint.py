# edit-checkpoint.py IN OUT EDIT... -- writes a copy of the safetensors file
# IN with each EDIT applied, for tests of damaged checkpoints:
#   meta:KEY=VALUE        set metadata KEY to the string VALUE
#   value:TENSOR:I=X      set element I of F32 tensor TENSOR to X (nan, inf, a number)
#   dtype:TENSOR=DTYPE    relabel TENSOR's dtype (its bytes stay as they are)
import json
import struct
import sys

source, target, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
data = open(source, "rb").read()
(size,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + size])
body = bytearray(data[8 + size:])
for edit in edits:
    kind, rest = edit.split(":", 1)
    if kind == "meta":
        key, value = rest.split("=", 1)
        header["__metadata__"][key] = value
    elif kind == "value":
        name, assignment = rest.rsplit(":", 1)
        index, value = assignment.split("=", 1)
        offset = header[name]["data_offsets"][0] + 4 * int(index)
        body[offset:offset + 4] = struct.pack("<f", float(value))
    elif kind == "dtype":
        name, dtype = rest.split("=", 1)
        header[name]["dtype"] = dtype
    else:
        sys.exit("unknown edit " + edit)
encoded = json.dumps(header).encode()
encoded += b" " * (-len(encoded) % 8)
open(target, "wb").write(struct.pack("<Q", len(encoded)) + encoded + bytes(body))
