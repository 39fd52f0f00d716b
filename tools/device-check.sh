#!/usr/bin/env bash
# device-check.sh — the one run on a GPU machine (issue 11): checks the build
# dependencies (those tools/bootstrap.sh installs; apt is tried once, briefly,
# for missing ones, since the machine may reach no mirror), builds remat with
# CUDA on every core, runs the CUDA test suites and bench_cuda, and prints ONE
# JSON object on stdout (logs under $DEVICE_CHECK_BUILD/device-check/).
# Every step has a time limit inside a 285 s budget; a failing step is
# reported and the next one still runs. Without a GPU it runs too: the
# suites skip (exit 77) and the JSON says "gpu": false.
#
#   tools/device-check.sh            # DEVICE_CHECK_BUILD=build-device, -j$(nproc)
#
# Not run here: cuda_lanes_ptx (PTX/SASS of every lane program; no GPU
# needed, CI runs it) and the CPU suites.
set -u
cd "$(dirname "$0")/.." || exit 2
T0=$(date +%s)
BUDGET=${DEVICE_CHECK_BUDGET:-285}
BUILD=${DEVICE_CHECK_BUILD:-build-device}
JOBS=${DEVICE_CHECK_JOBS:-$(nproc 2>/dev/null || echo 4)}
LOG=$BUILD/device-check
mkdir -p "$LOG" || exit 2
: >"$LOG/steps.tsv"
export PATH="$PATH:/usr/local/cuda/bin"

# step NAME LIMIT_S CMD...: runs CMD (output to $LOG/NAME.log) under
# min(LIMIT, what is left of the budget); records name, exit code, seconds
step() {
    local name=$1 limit=$2 left rc t
    shift 2
    left=$((BUDGET - ($(date +%s) - T0)))
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -le 5 ]; then
        printf '%s\t%s\t%s\n' "$name" "budget" 0 >>"$LOG/steps.tsv"
        return 124
    fi
    t=$(date +%s)
    timeout --kill-after=5 "$limit" "$@" >"$LOG/$name.log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" $(($(date +%s) - t)) >>"$LOG/steps.tsv"
    return $rc
}

# ---- the machine ----
step gpu 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
step tools 10 bash -c 'for c in gcc meson ninja pkg-config python3 nvcc ptxas; do printf "%s " "$c"; command -v "$c" || echo MISSING; done'

# the packages bootstrap.sh installs (its `install` lines), and which are missing
pkgs=$(sed -n '/^install gcc/,/[^\\]$/p' tools/bootstrap.sh | tr -d '\\' | tr -s ' \n' '\n' | grep -v '^install$' | grep .)
pkgs="$pkgs libgccjit-$(gcc -dumpversion 2>/dev/null | cut -d. -f1)-dev"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
echo "$missing" >"$LOG/missing.txt"
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    step apt 60 bash -c "DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing"
fi

# ---- build, tests, benchmark ----
if [ -f "$BUILD/build.ninja" ]; then
    step configure 60 meson configure "$BUILD" -Dcuda=enabled
else
    step configure 90 meson setup "$BUILD" -Dcuda=enabled --buildtype=release
fi
step build 170 ninja -C "$BUILD" -j"$JOBS"
cuda_tests=$(meson test -C "$BUILD" --list 2>/dev/null | sed 's/^.* \/ //' | grep -i cuda | grep -v '^cuda_lanes_ptx$' | grep -v '^bench_smoke_cuda$' | tr '\n' ' ')
echo "$cuda_tests" >"$LOG/cuda_tests.txt"
rm -f "$BUILD/meson-logs/testlog.json"
# shellcheck disable=SC2086
[ -n "$cuda_tests" ] && step tests 120 meson test -C "$BUILD" --no-rebuild --print-errorlogs --num-processes "$JOBS" $cuda_tests
step bench_cuda 150 "$BUILD/bench/bench_cuda"
cp "$LOG/bench_cuda.log" "$LOG/bench_cuda.out" 2>/dev/null

# ---- the summary ----
python3 - "$LOG" "$BUILD" "$(($(date +%s) - T0))" <<'PY'
import json, os, sys
log, build, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
def read(name):
    try:
        return open(os.path.join(log, name), errors="replace").read()
    except OSError:
        return ""
steps = {}
for line in read("steps.tsv").splitlines():
    name, rc, secs = line.split("\t")
    steps[name] = {"exit": rc if rc == "budget" else int(rc), "seconds": int(secs)}
    if rc not in ("0",):
        tail = read(name + ".log").strip().splitlines()[-15:]
        steps[name]["log_tail"] = tail
gpu = read("gpu.log").strip() if steps.get("gpu", {}).get("exit") == 0 else None
tests = {}
try:
    for line in open(os.path.join(build, "meson-logs", "testlog.json")):
        t = json.loads(line)
        tests[t["name"]] = {"result": t["result"], "seconds": round(t.get("duration", 0), 2)}
        if t["result"] == "SKIP":
            out = (t.get("stdout") or "").strip().splitlines()
            tests[t["name"]]["reason"] = next((l for l in out if "SKIP" in l), out[-1] if out else "")
except OSError:
    pass
bench = None
out = read("bench_cuda.out")
start = out.find('{"benchmark"')
if start >= 0:
    try:
        bench = json.loads(out[start:out.rindex("}") + 1])
    except ValueError as e:
        bench = {"unparsed": str(e), "tail": out[-2000:]}
elif out:
    bench = {"output": out.strip().splitlines()[-5:]}
# gpu (nvidia-smi) and apt only inform: no GPU is "gpu": false, and a package
# apt could not install fails the build, which is reported
failed = [n for n, s in steps.items()
          if s["exit"] != 0 and n not in ("gpu", "apt") and not (n == "bench_cuda" and s["exit"] == 77)]
failed += ["test " + n for n, t in tests.items() if t["result"] not in ("OK", "SKIP", "EXPECTEDFAIL")]
print(json.dumps({
    "device_check": "remat issue 11",
    "gpu": bool(gpu) and not steps.get("bench_cuda", {}).get("exit") == 77, "gpu_info": gpu,
    "missing_packages": read("missing.txt").split(),
    "seconds": total,
    "steps": steps,
    "cuda_tests": tests,
    "bench_cuda": bench,
    "bench_cuda_skipped": steps.get("bench_cuda", {}).get("exit") == 77,
    "failed": failed,
    "ok": not failed,
}, indent=1))
PY
