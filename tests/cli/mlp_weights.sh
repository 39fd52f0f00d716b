#!/usr/bin/env bash
# mlp_weights.sh REMAT — `remat mlp train` weights files (safetensors):
#   - --epochs 0 --save-weights dumps the seed's initial weights, and training
#     from them with --load-weights ends with the same weights, to the byte,
#     as training from the seed (so the file holds every parameter exactly);
#   - a round trip (load, --epochs 0, save) is bitwise;
#   - the file is safetensors: an 8-byte little-endian length, a JSON header
#     with each tensor's Flax name, dtype, shape and contiguous data_offsets
#     covering the rest of the file (read back with Python's standard
#     library where python3 is installed: no package needed);
#   - a name ending in .csv still writes the exact CSV;
#   - a scanned network's file names its stacked parameters, and the unrolled
#     network refuses it naming the missing parameter.
set -u
REMAT=$1
. "$(dirname "$0")/lib.sh"
cd "$work"
net="--layers 2 --width 16"

"$REMAT" mlp train $net --epochs 0 --save-weights init.safetensors >init.txt 2>init.err
check "--epochs 0 --save-weights exits 0" test $? -eq 0
check "  says the initial accuracy" has init.txt "initial (--epochs 0) test accuracy"
"$REMAT" mlp train $net --epochs 2 --save-weights seed.safetensors >/dev/null 2>seed.err
check "training from the seed exits 0" test $? -eq 0
"$REMAT" mlp train $net --epochs 2 --load-weights init.safetensors --save-weights loaded.safetensors >/dev/null 2>l.err
check "training from the dumped weights exits 0" test $? -eq 0
check "  ends with the same weights as from the seed" cmp seed.safetensors loaded.safetensors
check "  which differ from the initial ones" test -n "$(cmp init.safetensors seed.safetensors 2>&1)"
"$REMAT" mlp train $net --epochs 0 --load-weights seed.safetensors --save-weights again.safetensors >/dev/null 2>a.err
check "round trip load -> save is bitwise" cmp seed.safetensors again.safetensors

check "the header names Dense_0/kernel with its shape" grep -aqF '"Dense_0/kernel":{"dtype":"F32","shape":[64,16],"data_offsets":[0,4096]}' seed.safetensors
check "the header names the blocks' parameters as Flax does" grep -aqF '"MLPBlock_1/Dense_0/bias":{"dtype":"F32","shape":[16]' seed.safetensors
if command -v python3 >/dev/null 2>&1; then
    python3 - seed.safetensors >py.txt 2>py.err <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", b[:8])
h = json.loads(b[8:8 + n])
meta = h.pop("__metadata__")
assert meta == {"format": "flax", "producer": "remat"}, meta
end = 0
for name, t in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    lo, hi = t["data_offsets"]
    assert t["dtype"] == "F32" and lo == end, (name, t)
    numel = 1
    for d in t["shape"]:
        numel *= d
    assert hi - lo == 4 * numel, (name, t)
    end = hi
assert 8 + n + end == len(b), (8 + n + end, len(b))
k = h["Dense_0/kernel"]["data_offsets"][0]
print(len(h), struct.unpack("<f", b[8 + n + k:8 + n + k + 4])[0])
PY
    check "python3 (standard library) reads it back" test $? -eq 0
    cat py.err >&2
    check "  8 tensors" grep -q '^8 ' py.txt
fi

"$REMAT" mlp train $net --epochs 1 --save-weights w.csv >/dev/null 2>csv.err
check ".csv still writes the CSV" has w.csv "parameter,index,value"

"$REMAT" mlp train $net --epochs 0 --schedule store-all --save-weights scan.safetensors >/dev/null 2>scan.err
check "a scanned network's weights" grep -aqF '"ScanMLPBlock_0/Dense_0/kernel":{"dtype":"F32","shape":[2,16,16]' scan.safetensors
"$REMAT" mlp train $net --epochs 1 --load-weights scan.safetensors >/dev/null 2>mix.err
check "  refused by the unrolled network" test $? -eq 2
check "  naming the file and the parameter" has mix.err "scan.safetensors: tensor 'ScanMLPBlock_0/Dense_0/kernel' is not a parameter of this network"
exit $fail
