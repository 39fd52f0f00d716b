#!/usr/bin/env bash
# input_files.sh REMAT DATA EXAMPLES — what the remat tool reads
# (tools/remat/cli_files.c, pfr_data_list.c, ensemble_csv.c, src/core/file.c):
#   - no output replaces an input file, however it was named: an entry of a
#     --data-list, the 65th --data, a --params-file, through a symlink;
#   - what cannot be read whole (/dev/zero, /dev/urandom, a FIFO) is refused
#     at once, naming the file, and so is a file past the size cap; a large
#     file of zeros is refused at its first NUL byte, not read whole first;
#   - a --data-list or --params-file: a NUL byte is refused with file:line
#     (/dev/zero as a list ends at once), a UTF-8 byte-order mark accepted,
#     a params-file cell in double quotes read without its quotes.
# Every run that should end at once has `timeout`: exit 124 is a hang.
set -u
REMAT=$1 DATA=$2 EX=$3
DATA=$(cd "$DATA" && pwd)
EX=$(cd "$EX" && pwd)
. "$(dirname "$0")/lib.sh"
mkdir "$work/run" && cd "$work/run" || exit 1
export REMAT_NO_JIT=1
VDV=$EX/van_de_vusse.mech
plots=0
"$REMAT" --version | grep -q "plots: PLplot" && plots=1
status() { test "$1" -eq "$2" || { echo "     exit status $1, expected $2" >&2; false; }; }
fit() { timeout 120 "$REMAT" pfr fit --mechanism "$VDV" --max-iters 2 "$@"; }

# ---- inputs however named are never replaced ----
cp "$EX/feed_5.csv" f5.csv
cp f5.csv f5.orig
if [ $plots = 1 ]; then
    echo f5.csv >list.txt
    ln -s f5.csv view.png
    fit --data-list list.txt --plot view.png >/dev/null 2>err.txt
    check "--plot = an entry of --data-list (through a link) exits 2" status $? 2
    check "... naming the list and its line" has err.txt "remat: --plot: 'view.png' is the input file --data-list: list.txt:1 'f5.csv'"
    check "... the data file unchanged" same f5.orig f5.csv
    args=()
    for _ in $(seq 64); do args+=(--data f5.orig); done
    fit "${args[@]}" --data f5.csv --plot-residuals view.png >/dev/null 2>err.txt
    check "--plot-residuals = the 65th --data exits 2" status $? 2
    check "... naming it" has err.txt "is the input file --data 'f5.csv'"
    check "... the data file unchanged" same f5.orig f5.csv
    rm -f list.txt view.png
fi
printf 'k1,k2\n1,0.5\n' >sets.csv
cp sets.csv sets.orig
ln -s sets.csv sets.link
timeout 60 "$REMAT" pfr ensemble --params-file sets.csv --out sets.link >/dev/null 2>err.txt
check "--out = the --params-file (through a link) exits 2" status $? 2
check "... naming it" has err.txt "remat: --out: 'sets.link' is the input file --params-file 'sets.csv'"
check "... the params file unchanged" same sets.orig sets.csv
rm -f sets.link sets.orig

# ---- what cannot be read whole is refused at once ----
timeout 20 "$REMAT" pfr fit --mechanism "$VDV" --data-list /dev/zero >/dev/null 2>err.txt
check "--data-list /dev/zero ends, exit 2" status $? 2
check "... a NUL byte at /dev/zero:1" has err.txt "remat: --data-list: /dev/zero:1: a NUL byte"
timeout 20 "$REMAT" pfr simulate --mechanism /dev/zero --init A=1 >/dev/null 2>err.txt
check "--mechanism /dev/zero exits 2" status $? 2
check "... naming it" has err.txt "remat: --mechanism: /dev/zero: the mechanism file is a character device, not a regular file"
timeout 20 "$REMAT" pfr fit --mechanism "$VDV" --data /dev/urandom >/dev/null 2>err.txt
check "pfr fit --data /dev/urandom exits 2" status $? 2
check "... naming it" has err.txt "/dev/urandom: the data file is a character device, not a regular file"
timeout 20 "$REMAT" mlp train --data /dev/zero >/dev/null 2>err.txt
check "mlp train --data /dev/zero exits 2" status $? 2
check "... naming it" has err.txt "remat: --data: /dev/zero: the data file is a character device, not a regular file"
mkfifo pipe.mech # no writer: opening it to read would wait for one
timeout 20 "$REMAT" pfr simulate --mechanism pipe.mech --init A=1 >/dev/null 2>err.txt
check "--mechanism a FIFO exits 2 without waiting" status $? 2
check "... naming it" has err.txt "remat: --mechanism: pipe.mech: the mechanism file is a pipe (FIFO), not a regular file"
rm -f pipe.mech
truncate -s 2G huge.csv # sparse: no disk used
timeout 20 "$REMAT" pfr fit --mechanism "$VDV" --data huge.csv >/dev/null 2>err.txt
check "a 2 GiB --data exits 2" status $? 2
check "... past the size cap" has err.txt "huge.csv: the data file is 2147483648 bytes, more than the 1024 MiB"
rm -f huge.csv
# a file of zeros below the cap: refused at its first byte, not read whole
# (1000 MiB under a 400 MB address-space limit); not under a sanitizer,
# whose shadow memory takes more than the limit
truncate -s 1000M zeros.mech
if grep -qa __asan_init "$REMAT"; then
    echo "note: a sanitizer build: the 1000 MiB file of zeros is not run under ulimit -v"
else
    (ulimit -v 400000 && exec timeout 20 "$REMAT" pfr simulate --mechanism zeros.mech --init A=1) >/dev/null 2>err.txt
    check "1000 MiB of zeros as --mechanism under 400 MB exits 2" status $? 2
    check "... at the first NUL byte" has err.txt "remat: --mechanism: zeros.mech:1:1: NUL byte"
fi
rm -f zeros.mech

# ---- a NUL byte in a data list: refused at its line ----
printf 'f5.csv\nf5\0.csv\n' >nul_list.txt
fit --data-list nul_list.txt >/dev/null 2>err.txt
check "a NUL byte inside a --data-list line exits 2" status $? 2
check "... naming list:line" has err.txt "remat: --data-list: nul_list.txt:2: a NUL byte"
printf '\0f5.csv\n' >nul_first.txt
fit --data-list nul_first.txt >/dev/null 2>err.txt
check "a NUL byte first on a --data-list line exits 2" status $? 2
check "... naming list:line" has err.txt "remat: --data-list: nul_first.txt:1: a NUL byte"
printf 'k1,k2\n1,0\0.5\n' >nul_sets.csv
timeout 60 "$REMAT" pfr ensemble --params-file nul_sets.csv >/dev/null 2>err.txt
check "a NUL byte in a --params-file's row exits 1 (as any bad row)" status $? 1
check "... naming file:line" has err.txt "nul_sets.csv:2: a NUL byte"
printf 'k1,\0k2\n1,0.5\n' >nul_head.csv
timeout 60 "$REMAT" pfr ensemble --params-file nul_head.csv >/dev/null 2>err.txt
check "a NUL byte in a --params-file's header exits 2" status $? 2
check "... naming file:line" has err.txt "nul_head.csv:1: a NUL byte"
rm -f nul_list.txt nul_first.txt nul_sets.csv nul_head.csv

# ---- a UTF-8 byte-order mark, quoted cells ----
printf '\357\273\277f5.csv\n' >bom_list.txt
fit --data-list bom_list.txt >bom.out 2>err.txt
rc=$?
check "a --data-list with a byte-order mark is read" test $rc -eq 0 -o $rc -eq 3
fit --data f5.csv >plain.out 2>/dev/null
check "... the same fit as --data" test "$(grep -v 'program runs' bom.out)" = "$(grep -v 'program runs' plain.out)"
printf '\357\273\277k1,k2\n1,0.5\n' >bom_sets.csv
timeout 60 "$REMAT" pfr ensemble --params-file bom_sets.csv >bom.csv 2>err.txt
check "a --params-file with a byte-order mark exits 0" status $? 0
timeout 60 "$REMAT" pfr ensemble --params-file sets.csv >plain.csv 2>/dev/null
check "... the same sets as without" same plain.csv bom.csv
printf '"k1","k2"\n"1","0.5"\n' >quoted.csv
timeout 60 "$REMAT" pfr ensemble --params-file quoted.csv >quoted.out 2>err.txt
check "a --params-file with quoted cells exits 0" status $? 0
check "... the same sets as without quotes" same plain.csv quoted.out
exit $fail
