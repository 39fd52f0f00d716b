#!/usr/bin/env python3
"""Generate tests/goldens/cantera_rev.json and tests/goldens/cantera_rev{,_molec}.ck: CHEMKIN
reactions with explicit reverse parameters (REV) that are also three-body (+M) or falloff
((+M), LOW/TROE), for tests/test_gas.c (cantera_rev).

    python3 -m venv .venv-goldens && .venv-goldens/bin/pip install cantera
    .venv-goldens/bin/python tools/goldens/gen_rev_goldens.py    # from the repository root

Cantera's ck2yaml turns a REV reaction into two irreversible ones. A three-body reverse
keeps the third body and the forward's efficiencies (k_r [M]); a falloff reverse becomes a
bare elementary Arrhenius reaction (no [M], no falloff function). The file records, at a
few states (T, P, mole fractions), Cantera's net rates of progress and net production rates
(converted to mol/m^3/s), with the converted YAML's equations for reference; under
"molecules", the same for the mechanism with its A per molecule (REACTIONS ... MOLECULES).
"""

import json
import os
import subprocess
import sys
import tempfile

import cantera as ct
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLD = os.path.join(ROOT, "tests", "goldens")
THERMO = os.path.join(ROOT, "data", "mechanisms", "h2o2_thermo.dat")

MECH = """! REV on three-body, falloff and elementary reactions (tools/goldens/gen_rev_goldens.py)
ELEMENTS
O H AR N
END
SPECIES
H2 H O O2 OH H2O HO2 H2O2 AR N2
END
REACTIONS CAL/MOLE MOLES
H + O2 + M <=> HO2 + M     2.8E+18 -0.86 0.0
H2O/12.0/ AR/0.5/
REV /3.5E+19 -1.1 49000.0/
H + OH + M <=> H2O + M     2.2E+22 -2.0 0.0
REV /4.0E+23 -2.2 118000.0/
2 OH (+M) <=> H2O2 (+M)    7.4E+13 -0.37 0.0
LOW /2.3E+18 -0.9 -1700.0/
TROE /0.7346 94 1756 5182/
H2O/6.0/ AR/0.7/
REV /2.0E+15 0.0 48000.0/
O + H2O <=> 2 OH           2.97E+06 2.02 13400.0
REV /1.45E+05 2.11 -2900.0/
H2 + O <=> H + OH          38700.0 2.7 6260.0
H + O2 <=> O + OH          2.65E+16 -0.6707 17041.0
END
"""

STATES = [
    {"T": 1200.0, "P": ct.one_atm, "X": "H2:0.3,H:0.01,O:0.005,O2:0.2,OH:0.02,H2O:0.15,HO2:0.003,H2O2:0.002,AR:0.1,N2:0.21"},
    {"T": 1800.0, "P": 5 * ct.one_atm, "X": "H2:0.1,H:0.04,O:0.03,O2:0.1,OH:0.06,H2O:0.4,HO2:0.001,H2O2:0.0005,AR:0.05,N2:0.2185"},
    {"T": 900.0, "P": 0.2 * ct.one_atm, "X": "H2:0.4,H:0.001,O:0.0005,O2:0.3,OH:0.002,H2O:0.05,HO2:0.01,H2O2:0.02,AR:0.2,N2:0.0165"},
]


def rates(ck):
    with tempfile.TemporaryDirectory() as tmp:
        yml = os.path.join(tmp, "rev.yaml")
        subprocess.run([sys.executable, "-m", "cantera.ck2yaml", "--input", ck, "--thermo", THERMO,
                        "--output", yml], check=True, stdout=subprocess.DEVNULL)
        gas = ct.Solution(yml)
    states = []
    for s in STATES:
        gas.TPX = s["T"], s["P"], s["X"]
        states.append({
            "T": s["T"],
            "P": s["P"],
            "X": [float(x) for x in gas.X],
            "net_rates_of_progress": [float(q) * 1e3 for q in gas.net_rates_of_progress],  # mol/m^3/s
            "net_production_rates": [float(w) * 1e3 for w in gas.net_production_rates],    # mol/m^3/s
        })
    return gas, states


def main():
    # the same reactions with A per molecule (MOLECULES): each A converts by its own reaction's
    # order, a three-body reverse's counting M (Cantera's YAML reader, after ck2yaml)
    mechs = {"cantera_rev.ck": MECH,
             "cantera_rev_molec.ck": MECH.replace("CAL/MOLE MOLES", "CAL/MOLE MOLECULES")}
    docs = []
    for name, text in mechs.items():
        ck = os.path.join(GOLD, name)
        with open(ck, "w") as f:
            f.write(text)
        gas, states = rates(ck)
        docs.append({"mechanism": name, "states": states})
    doc = {
        "generator": {"cantera": ct.__version__, "numpy": np.__version__, "script": "tools/goldens/gen_rev_goldens.py",
                      "units": "mol, m^3, s"},
        "mechanism": docs[0]["mechanism"],
        "thermo": "data/mechanisms/h2o2_thermo.dat",
        "species": gas.species_names,
        "cantera_reactions": [{"equation": r.equation, "type": r.reaction_type} for r in gas.reactions()],
        "states": docs[0]["states"],
        "molecules": docs[1],
    }
    with open(os.path.join(GOLD, "cantera_rev.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for r in gas.reactions():
        print(r.equation, r.reaction_type)


if __name__ == "__main__":
    main()
