#!/usr/bin/env python3
"""Cantera's side of bench/bench_gas.c: constant-pressure ignition with
IdealGasConstPressureReactor / ReactorNet (CVODES), the forward integration
and the forward integration with CVODES forward sensitivities of the state to
every reaction's multiplier (T's row is d T / d m_i), same tolerances.

    .venv-goldens/bin/python bench/gas_cantera.py MECH COMPOSITION T0 LENGTH T_SENS [RTOL ATOL ROUNDS]

One JSON document on stdout, median wall times in ms.
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
    gas = ct.Solution(mech)
    res = {"mechanism": mech, "cantera": ct.__version__, "species": gas.n_species, "reactions": gas.n_reactions,
           "T0": T0, "length": L, "t_sens": ts, "rtol": rtol, "atol": atol, "rounds": rounds}
    for name, t_end, sens in (("forward", L, False), ("sensitivities_all_multipliers", ts, True)):
        times, out = [], None
        for _ in range(rounds):
            t = time.perf_counter()
            out = run(gas, T0, comp, t_end, rtol, atol, sens)
            times.append((time.perf_counter() - t) * 1e3)
        out["median_ms"] = statistics.median(times)
        res[name] = out
    print(json.dumps(res))


if __name__ == "__main__":
    main()
