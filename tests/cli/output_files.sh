#!/usr/bin/env bash
# output_files.sh REMAT DATA — where `--out` and `--plot` may write, and what
# a failed write leaves (tools/remat/cli_out.c):
#   - a device (/dev/null, /dev/stdout, /dev/full) is written in place, never
#     renamed over; a full device fails the run naming "No space left on
#     device", exit 1;
#   - a symlink to a file keeps the link and replaces the file it names;
#   - an output that is an input file (--mechanism, --data), however spelled,
#     and a read-only output are refused before any work, the file unchanged;
#   - a write cut short by `ulimit -f` (EFBIG), to the CSV or inside PLplot,
#     fails the run naming "File too large" and leaves no file;
#   - a run that fails after an output is complete (a plot after the
#     weights) leaves every previous file as it was;
#   - two outputs on one file (however spelled) are refused before the work;
#   - SIGTERM in the middle of a run removes the temp file;
#   - SIGKILL while PLplot draws leaves no file, beside the output or in
#     TMPDIR (PLplot draws into an unnamed file);
#   - a full TMPDIR (a tmpfs of 64 KiB, in a mount namespace of unshare -rm)
#     fails --plot naming TMPDIR, not PLplot's "No device drivers found".
set -u
REMAT=$1 DATA=$2
DATA=$(cd "$DATA" && pwd)
. "$(dirname "$0")/lib.sh"
mkdir "$work/run" && cd "$work/run" || exit 1
export REMAT_NO_JIT=1 # the size limit would stop the JIT's assembler too: not what is tested here
plots=0
"$REMAT" --version | grep -q "plots: PLplot" && plots=1
only() { # the scratch directory holds exactly these names
    local got
    got=$(ls -A | sort | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$*" ] || { echo "     files: '$got', expected '$*'" >&2; false; }
}
status() { test "$1" -eq "$2" || { echo "     exit status $1, expected $2" >&2; false; }; }

# ---- devices: always through links and nodes in the scratch directory, so
# that a tool which renames over them (as root) cannot replace the real ones ----
ln -s /dev/null null.csv
"$REMAT" pfr simulate --steps 5 --out null.csv >/dev/null 2>err.txt
check "--out to /dev/null exits 0" status $? 0
check "the link to /dev/null is still a link" test "$(readlink null.csv)" = /dev/null
ln -s /dev/stdout stdout.csv
"$REMAT" pfr simulate --steps 5 --out stdout.csv >out.txt 2>err.txt
check "--out to /dev/stdout exits 0" status $? 0
check "--out to /dev/stdout writes the CSV to stdout" has out.txt "z,A,B,C"
check "the link to /dev/stdout is still a link" test "$(readlink stdout.csv)" = /dev/stdout
mkfifo pipe.csv
timeout 60 cat pipe.csv >piped.txt &
reader=$!
"$REMAT" pfr simulate --steps 5 --out pipe.csv >/dev/null 2>err.txt
check "--out to a FIFO exits 0" status $? 0
wait $reader
check "the FIFO's reader got the CSV" has piped.txt "z,A,B,C"
check "the FIFO is still a FIFO" test -p pipe.csv
ln -s /dev/full full.csv
"$REMAT" pfr simulate --steps 5 --out full.csv >out.txt 2>err.txt
check "--out to /dev/full exits 1" status $? 1
check "--out to /dev/full names the reason" has err.txt "remat: --out: cannot write 'full.csv': No space left on device"
check "the link to /dev/full is still a link" test "$(readlink full.csv)" = /dev/full
check "nothing else was written" only err.txt full.csv null.csv out.txt pipe.csv piped.txt stdout.csv
rm -f err.txt full.csv null.csv out.txt pipe.csv piped.txt stdout.csv
if [ $plots = 1 ]; then
    ln -s /dev/full full.png
    "$REMAT" pfr optimize --iters 2 --plot full.png >/dev/null 2>err.txt
    check "--plot to /dev/full exits 1" status $? 1
    check "--plot to /dev/full names the reason" has err.txt "remat: --plot: cannot write 'full.png': No space left on device"
    check "the link to /dev/full is still a link, nothing else written" only err.txt full.png
    check "... to /dev/full" test "$(readlink full.png)" = /dev/full
    rm -f full.png err.txt
    mkfifo pipe.png
    timeout 60 cat pipe.png >piped.png &
    reader=$!
    "$REMAT" pfr optimize --iters 2 --plot pipe.png >/dev/null 2>err.txt
    check "--plot to a FIFO exits 0" status $? 0
    wait $reader
    check "the FIFO's reader got the whole PNG" test "$(tail -c 8 piped.png | od -An -c | tr -d ' ')" = 'IEND256B`202'
    check "the FIFO is still a FIFO" test -p pipe.png
    rm -f pipe.png piped.png err.txt
fi

# ---- a symlink to a file ----
echo old >target.csv
chmod 640 target.csv
ln -s target.csv link.csv
"$REMAT" pfr simulate --steps 5 --out link.csv >/dev/null 2>err.txt
check "--out through a link exits 0" status $? 0
check "the link stays a link" test -L link.csv
check "the file it names gets the CSV" has target.csv "z,A,B,C"
check "the replaced file keeps its permissions" test "$(stat -c %a target.csv)" = 640
ln -s missing.csv dangling.csv
"$REMAT" pfr simulate --steps 5 --out dangling.csv >/dev/null 2>err.txt
check "--out through a dangling link exits 2" status $? 2
check "--out through a dangling link says so" has err.txt "cannot write 'dangling.csv': a symbolic link to a missing file"
check "... and creates nothing" only dangling.csv err.txt link.csv target.csv
rm -f target.csv link.csv err.txt dangling.csv

# ---- inputs and read-only files are not replaced ----
cp "$DATA/net.mech" net.mech
cp net.mech net.orig
ln -s net.mech alias.mech
"$REMAT" pfr simulate --mechanism net.mech --init A=1 --out ./alias.mech >/dev/null 2>err.txt
check "--out = the mechanism (through a link) exits 2" status $? 2
check "--out = the mechanism is named" has err.txt "remat: --out: './alias.mech' is the input file --mechanism 'net.mech'"
check "the mechanism is unchanged" same net.orig net.mech
cp "$DATA/good.csv" data.png
cp data.png data.orig
"$REMAT" pfr fit --mechanism net.mech --data data.png --plot "$PWD/data.png" >/dev/null 2>err.txt
check "--plot = a --data file exits 2" status $? 2
check "--plot = a --data file is named" has err.txt "is the input file --data 'data.png'"
check "the data file is unchanged" same data.orig data.png
echo old >ro.csv
chmod a-w ro.csv
"$REMAT" pfr simulate --steps 5 --out ro.csv >/dev/null 2>err.txt
check "a read-only --out exits 2" status $? 2
check "a read-only --out says so" has err.txt "remat: --out: cannot write 'ro.csv': the file is read-only"
check "the read-only file is unchanged" test "$(cat ro.csv)" = old
check "nothing else was written" only alias.mech data.orig data.png err.txt net.mech net.orig ro.csv
rm -f alias.mech data.orig data.png err.txt net.mech net.orig ro.csv

# ---- a run that fails after one output is complete leaves every old file ----
echo old >w.csv
ln -s /dev/full full.png
"$REMAT" mlp train --epochs 1 --layers 1 --width 8 --save-weights w.csv --plot full.png >/dev/null 2>err.txt
check "mlp train, the plot failing after the weights: exit 1" status $? $((plots ? 1 : 2))
check "... the old weights file unchanged" test "$(cat w.csv)" = old
echo old >profile.csv
"$REMAT" pfr simulate --steps 5 --out profile.csv --plot full.png >/dev/null 2>err.txt
check "pfr simulate, the plot failing: exit 1" status $? $((plots ? 1 : 2))
check "... the old --out file unchanged" test "$(cat profile.csv)" = old
if [ $plots = 1 ]; then
    cp "$DATA/net.mech" net.mech
    echo old >fit.png
    "$REMAT" pfr fit --mechanism net.mech --data "$DATA/good.csv" --max-iters 2 --plot fit.png \
        --plot-residuals full.png >/dev/null 2>err.txt
    check "pfr fit, --plot-residuals failing after --plot: exit 1" status $? 1
    check "... the old --plot file unchanged" test "$(cat fit.png)" = old
    rm -f net.mech fit.png
fi
check "... and no temp file left" only err.txt full.png profile.csv w.csv
rm -f err.txt full.png profile.csv w.csv

# ---- two outputs of one run on one file: refused before the work ----
"$REMAT" pfr simulate --steps 5 --out same.png --plot ./same.png >/dev/null 2>err.txt
check "--out and --plot on one path exit 2" status $? 2
[ $plots = 1 ] && check "... naming both" has err.txt "remat: --out: 'same.png' is also the output file of --plot './same.png'"
echo old >s.csv
ln -s s.csv s.png
"$REMAT" mlp train --epochs 1 --layers 1 --width 8 --save-weights s.csv --plot s.png >/dev/null 2>err.txt
check "--save-weights and --plot on one file (a link) exit 2" status $? 2
[ $plots = 1 ] && check "... naming both" has err.txt "is also the output file of"
check "... the file unchanged" test "$(cat s.csv)" = old
if [ $plots = 1 ]; then
    cp "$DATA/net.mech" net.mech
    "$REMAT" pfr fit --mechanism net.mech --data "$DATA/good.csv" --max-iters 2 --plot x.png \
        --plot-residuals x.png >/dev/null 2>err.txt
    check "--plot and --plot-residuals on one path exit 2" status $? 2
    check "... naming both" has err.txt "remat: --plot-residuals: 'x.png' is also the output file of --plot 'x.png'"
    rm -f net.mech
fi
ln -s /dev/null null.csv
ln -s /dev/null null.png
"$REMAT" pfr simulate --steps 5 --out null.csv --plot null.png >/dev/null 2>err.txt
check "... but /dev/null may take every output" status $? $((plots ? 0 : 2))
check "nothing else was written" only err.txt null.csv null.png s.csv s.png
rm -f err.txt null.csv null.png s.csv s.png

# ---- a write cut short: `ulimit -f` (KiB) makes the kernel refuse with EFBIG ----
(ulimit -f 4 && exec "$REMAT" pfr simulate --steps 2000 --out big.csv) >/dev/null 2>err.txt
check "--out past the size limit exits 1" status $? 1
check "--out past the size limit names the reason" has err.txt "remat: --out: cannot write 'big.csv': File too large"
if [ $plots = 1 ]; then
    (ulimit -f 4 && exec "$REMAT" pfr optimize --iters 2 --plot big.png) >/dev/null 2>>err.txt
    check "--plot past the size limit exits 1" status $? 1
    check "--plot past the size limit names the reason" has err.txt "remat: --plot: cannot write 'big.png': PLplot's pngcairo output is incomplete"
    check "... File too large" test "$(grep -c 'File too large' err.txt)" -eq 2
fi
check "a write cut short leaves no file" only err.txt
rm -f err.txt

# ---- SIGTERM mid-run: the temp file goes ----
"$REMAT" pfr simulate --steps 3000000 --out long.csv >/dev/null 2>err.txt &
pid=$!
unnamed_open() { # the output is open as an unnamed file (O_TMPFILE: "/dir/#ino (deleted)")
    ls -l /proc/$pid/fd 2>/dev/null | grep -q "$PWD/#[0-9]* (deleted)"
}
for _ in $(seq 200); do # the output is opened before the work starts
    unnamed_open && break
    sleep 0.05
done
check "the output is open, unnamed, during the run" unnamed_open
check "... and nothing of it has a name yet" only err.txt
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM ends the run by the signal" status $rc 143
check "SIGTERM leaves no temp file" only err.txt
rm -f err.txt

if [ $plots = 1 ]; then
    # ---- SIGKILL while PLplot draws ----
    mkdir "$work/tmp"
    drawing() { # a file for PLplot: named in TMPDIR, or a second unnamed one beside the output
        ls "$work/tmp" | grep -q . ||
            test "$(ls -l /proc/$pid/fd 2>/dev/null | grep -c "$PWD/#[0-9]* (deleted)")" -ge 2
    }
    running() { [ -r /proc/$pid/status ] && ! grep -q '^State:[[:space:]]*Z' /proc/$pid/status; }
    # A run that ends before it is seen drawing, or before the kill reaches it
    # (a busy machine polls slowly), is no failure of remat's: its output
    # removed, a longer run tries again.
    seen=0 killed=0
    for steps in 200000 800000 3200000 6400000; do
        TMPDIR=$work/tmp "$REMAT" pfr simulate --steps $steps --plot long.png >/dev/null 2>err.txt &
        pid=$!
        for _ in $(seq 1000); do
            drawing && { seen=1; break; }
            running || break
            sleep 0.01
        done
        [ $seen = 1 ] && kill -KILL $pid 2>/dev/null
        wait $pid
        [ $? = 137 ] && { killed=1; break; } # by the kill, not done first
        seen=0
        rm -f long.png err.txt
    done
    check "PLplot draws into a file of its own" test $seen = 1
    check "... and is killed while it draws" test $killed = 1
    check "SIGKILL while drawing leaves nothing beside the output" only err.txt
    check "... nor in TMPDIR" test -z "$(ls -A "$work/tmp")"
    rm -f err.txt

    # ---- a full TMPDIR ----
    mkdir "$work/full"
    if unshare -rm true 2>/dev/null; then
        unshare -rm sh -c 'mount -t tmpfs -o size=64k tmpfs "$1" && { dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null
            TMPDIR=$1 exec "$2" pfr optimize --iters 2 --plot full.png; }' sh "$work/full" "$REMAT" >/dev/null 2>err.txt
        check "--plot with a full TMPDIR exits 1" status $? 1
        check "... naming TMPDIR and the plot" has err.txt \
            "remat: --plot: cannot draw 'full.png': TMPDIR '$work/full' takes no more data (No space left on device)"
        check "... not PLplot's exit" test "$(grep -c PLPLOT err.txt)" -eq 0
        check "... and leaves no file" only err.txt
    else
        echo "note: no unshare -rm here (user namespaces off): a full TMPDIR not tried"
    fi
fi
exit $fail
