#!/usr/bin/env bash
# numbers.sh REMAT DATA — numbers the remat tool takes (bad ones are rows of
# bad_inputs.txt): a subnormal such as 5e-324 is a finite number wherever a
# number is read (--length, --params, --init, an ensemble's cells), and a
# --memory-budget of 2^63 - 1 bytes, which its message allows, is taken,
# written in bytes or in G; a negative parameter where the mechanism
# declares a negative lower bound (elsewhere it is refused: bad_inputs.txt).
set -u
REMAT=$1 DATA=$2
. "$(dirname "$0")/lib.sh"
cd "$work"

"$REMAT" pfr simulate --params k1=5e-324 >sub_params.txt 2>sub_params.err
check "--params k1=5e-324 is a number" test $? -eq 0
check "--params k1=5e-324 is printed back" has sub_params.txt "k1 = 4.94065646e-324"
"$REMAT" pfr simulate --init A=1,B=5e-324 >sub_init.txt 2>sub_init.err
check "--init B=5e-324 is a number" test $? -eq 0
"$REMAT" pfr simulate --length 5e-324 --steps 1 >sub_length.txt 2>sub_length.err
check "--length 5e-324 is a number" test $? -eq 0
printf 'k1\n5e-324\n1\n' >sets.csv
"$REMAT" pfr ensemble --params-file sets.csv --out ens.csv 2>ens.err
check "an ensemble cell of 5e-324 is a number" test $? -eq 0
"$REMAT" pfr compare --memory-budget 9223372036854775807 --repeat 1 >budget.txt 2>budget.err
check "--memory-budget 9223372036854775807 (2^63 - 1) is taken" test $? -eq 0
"$REMAT" pfr compare --memory-budget 8589934591G --repeat 1 >budget_g.txt 2>budget_g.err
check "--memory-budget 8589934591G is taken" test $? -eq 0
"$REMAT" pfr simulate --mechanism "$DATA/negative_bound.mech" --init A=1 --params k=-0.5 >neg.txt 2>neg.err
check "--params k=-0.5 is taken where the mechanism declares k in [-1, 2]" test $? -eq 0
exit $fail
