#!/usr/bin/env python3
"""Cantera's side of bench/bench_gas.c: constant-pressure ignition with
IdealGasConstPressureReactor / ReactorNet (CVODES), the forward integration
and the forward integration with CVODES forward sensitivities of the state to
every reaction's multiplier (T's row is d T / d m_i), same tolerances.

    .venv-goldens/bin/python bench/gas_cantera.py MECH COMPOSITION T0 LENGTH T_SENS [RTOL ATOL ROUNDS [SENS_ROUNDS]]

One JSON document on stdout: per run, the median wall time ("median_ms") and
the median CPU time of this process ("median_cpu_ms", time.process_time: what
bench_gas compares with its own CPU median), in ms. SENS_ROUNDS (default
ROUNDS) sets the rounds of the sensitivity run alone: on GRI-Mech 3.0 one
round of 325 sensitivity equations takes minutes; 0 leaves the sensitivity run
out (bench_gas then reports the forward ratios alone).
"""
import json
import statistics
import sys
import time

import cantera as ct


def run(gas, T0, comp, t_end, rtol, atol, sens):
    gas.TPX = T0, ct.one_atm, comp
    r = ct.IdealGasConstPressureReactor(gas, clone=True)
    net = ct.ReactorNet([r])
    net.rtol, net.atol = rtol, atol
    net.max_steps = 10**7
    if sens:
        for i in range(gas.n_reactions):
            r.add_sensitivity_reaction(i)
        net.rtol_sensitivity, net.atol_sensitivity = rtol, atol
    net.advance(t_end)
    out = {"T": r.phase.T}
    if sens:
        out["dT_dm1"] = net.sensitivity("temperature", 0) * r.phase.T  # Cantera's are relative: d ln T / d ln m
    return out


def main():
    a = sys.argv[1:]
    mech, comp, T0, L, ts = a[0], a[1].replace("=", ":"), float(a[2]), float(a[3]), float(a[4])
    rtol = float(a[5]) if len(a) > 5 else 1e-8
    atol = float(a[6]) if len(a) > 6 else 1e-14
    rounds = int(a[7]) if len(a) > 7 else 5
    sens_rounds = int(a[8]) if len(a) > 8 else rounds
    gas = ct.Solution(mech)
    res = {"mechanism": mech, "cantera": ct.__version__, "species": gas.n_species, "reactions": gas.n_reactions,
           "T0": T0, "length": L, "t_sens": ts, "rtol": rtol, "atol": atol, "rounds": rounds,
           "sens_rounds": sens_rounds}
    for name, t_end, sens, n in (("forward", L, False, rounds),
                                 ("sensitivities_all_multipliers", ts, True, sens_rounds)):
        if n == 0:  # SENS_ROUNDS 0: the forward run alone
            continue
        wall, cpu, out = [], [], None
        for _ in range(n):
            t, c = time.perf_counter(), time.process_time()
            out = run(gas, T0, comp, t_end, rtol, atol, sens)
            cpu.append((time.process_time() - c) * 1e3)
            wall.append((time.perf_counter() - t) * 1e3)
        out["median_ms"] = statistics.median(wall)
        out["median_cpu_ms"] = statistics.median(cpu)
        res[name] = out
    print(json.dumps(res))


if __name__ == "__main__":
    main()
