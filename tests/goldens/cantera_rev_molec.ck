! REV on three-body, falloff and elementary reactions (tools/goldens/gen_rev_goldens.py)
ELEMENTS
O H AR N
END
SPECIES
H2 H O O2 OH H2O HO2 H2O2 AR N2
END
REACTIONS CAL/MOLE MOLECULES
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
