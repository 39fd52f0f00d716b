/*
 * remat/gas.h — gas-phase mechanisms from Cantera YAML and CHEMKIN-II files,
 * as an ideal-gas reactor at constant pressure.
 *
 * The reader turns a mechanism with its thermochemistry into an ordinary
 * remat_mechanism (remat/mechanism.h), so every integrator, schedule,
 * forward and reverse mode, the reactor (remat/pfr.h), fitting and
 * ensembles take it as they take a .mech file:
 *
 *   remat_mechanism *m;
 *   remat_gas_options o = {.energy = REMAT_GAS_ADIABATIC};
 *   if (remat_gas_read("h2o2.yaml", &o, &m) != REMAT_OK)
 *       puts(remat_last_error());                  // h2o2.yaml:12: ...
 *   int K = remat_gas_species_count(m);            // 10; the state has K + 1 entries
 *   double y0[11];
 *   remat_gas_state(m, 1100.0, "H2=2,O2=1,N2=3.76", y0); // mole fractions, then T
 *   // remat_pfr_options.inlet = y0, .length = residence time in s, .method = rodas5
 *
 * The model. State y = (X_1 .. X_K, T): the mole fractions of the gas
 * species in file order and the temperature (K); the independent variable
 * is the residence time t (s). Pressure is the parameter P (Pa, default one
 * atmosphere), constant during a run. With C = P / (R T) the molar
 * concentration, C_k = C X_k, and q_i each reaction's rate of progress
 * (mol/m^3/s, forward minus reverse), omega_k = sum_i nu_ki q_i and
 *   dX_k/dt = (omega_k - X_k sum_j omega_j) / C,
 *   dT/dt   = -T sum_k (h_k / (R T)) omega_k / (C sum_k X_k c_p,k / R)   (adiabatic)
 *   dT/dt   = 0                                                          (isothermal)
 * with h_k and c_p,k from the NASA 7-coefficient polynomials (low range for
 * T <= T_mid, as Cantera). This is Cantera's IdealGasConstPressureReactor
 * written in moles.
 *
 * Rates (as Cantera 3 evaluates them):
 *   - Arrhenius k = A T^b exp(-Ea / (R T));
 *   - three-body: k [M], [M] = sum_k eff_k C_k (efficiencies default 1, or the
 *     default-efficiency), or one named collider "(+AR)";
 *   - falloff (Lindemann, Troe, SRI): Pr = k0 [M] / kinf, k = kinf Pr/(1+Pr) F;
 *     chemically activated: k = k0 F / (1 + Pr);
 *   - PLOG: log k linear in log P between the listed pressures, the end
 *     rates outside them; rates listed at one pressure are summed;
 *   - reverse rate k / Kc with Kc = exp(-sum_k nu_k g_k / (R T)) (P_ref /
 *     (R T))^(sum_k nu_k), P_ref one atmosphere; or an explicit reverse
 *     Arrhenius (CHEMKIN REV);
 *   - orders: product of C_k^order over the reactants, or the explicit
 *     orders (YAML `orders`, CHEMKIN FORD) where given.
 *
 * Parameters, in this order (remat_mechanism_param_*):
 *   P         pressure, Pa (default 101325)
 *   m1..mN    rate multiplier of reaction i, 1-based in file order (default
 *             1): scales its forward and reverse rate, as Cantera's
 *             set_multiplier; d output / d m_i is the sensitivity to it
 *   A<i>, b<i>, Ea<i>  the reaction's Arrhenius parameters in SI with moles
 *             ((m^3/mol)^(order-1)/s, 1, J/mol): of the rate for elementary
 *             and three-body reactions, of the high-pressure limit for
 *             falloff, of the low-pressure limit for chemically activated
 *             reactions; PLOG reactions have none. An A whose file unit
 *             is a power of ten from SI (cm^3/mol/s) is the correctly
 *             rounded SI value of the number written (1.2e17 cm^6/mol^2/s:
 *             120000 exactly), so a fit prints it as the user wrote it
 * Species of the mechanism: the K gas species, then "T".
 *
 * Duplicates: a reaction given twice (the same reactants and products, or
 * each other's reverse when either is reversible, of the same form: no third
 * body, "+ M" with the same efficiencies, or "(+M)" with the same collider)
 * has both rates added only when both are marked (CHEMKIN DUPLICATE or DUP,
 * YAML `duplicate: true`); unmarked, it is an error naming file:line and both
 * reactions, as is a mark on a reaction without such a twin (Cantera's
 * checkDuplicates).
 *
 * Elements: each species' element composition is read (YAML `composition`;
 * CHEMKIN: the thermo entry's line 1, (2-character symbol, 3-character
 * count) at columns 25-44 and an optional fifth at columns 74-78). Every
 * reaction must balance every element, |products - reactants| <= 1e-4
 * (products + reactants) atoms as Cantera's Reaction::checkBalance, else an
 * error naming file:line of the reaction, the reaction as written and the
 * element with its count on both sides; Cantera has no opt-out for a gas
 * phase, nor has remat. Where the file lists its elements (CHEMKIN
 * ELEMENTS, the YAML phase's `elements`), a species with another element is
 * an error naming the species and file:line; a YAML species needs a
 * `composition`.
 *
 * Not supported, each an error naming file:line and the feature: surface or
 * edge phases and interface kinetics, charged species (ions, electrons),
 * non-ideal phases (Redlich-Kwong, Peng-Robinson, ...), Chebyshev rates,
 * NASA 9 or Shomate thermo, coverage dependence, Blowers-Masel and other
 * rate types, CHEMKIN keywords TDEP, XSMI, MOME, EXCI, LT, RLT, JAN, FIT1,
 * CHEB, PCHEB and UNITS on one reaction (HIGH, a chemically activated
 * reaction's high-pressure limit, is read).
 */
#ifndef REMAT_GAS_H
#define REMAT_GAS_H

#include "export.h"
#include "graph.h"
#include "mechanism.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    REMAT_GAS_ADIABATIC = 0, /* energy balance from the thermo (default) */
    REMAT_GAS_ISOTHERMAL,    /* T stays at its initial value */
} remat_gas_energy;

typedef struct {
    remat_gas_energy energy;
    const char *thermo; /* CHEMKIN: the thermo file; NULL: the THERMO section of the mechanism file */
    const char *phase;  /* YAML: the phase's name; NULL: the first ideal-gas phase */
} remat_gas_options;

typedef enum {
    REMAT_GAS_FORMAT_NONE = 0, /* neither (a .mech file) */
    REMAT_GAS_FORMAT_YAML,     /* Cantera YAML */
    REMAT_GAS_FORMAT_CHEMKIN,  /* CHEMKIN-II input */
} remat_gas_format;

/* What a text looks like: Cantera YAML (a top-level "phases:", "species:",
 * "units:", "description:", "generator:" or "reactions:" key) or CHEMKIN
 * (a line that starts with ELEMENTS, ELEM, SPECIES, SPEC, THERMO, REACTIONS
 * or REAC in upper case, alone or followed by a blank, with no "->", "<=>"
 * or ':' on it), else REMAT_GAS_FORMAT_NONE. A .mech file is neither (its
 * "species A, B" is lower case). NULL: NONE. */
REMAT_API remat_gas_format remat_gas_sniff(const char *text);
/* remat_gas_sniff on a file's first 64 KiB; NONE when it cannot be read or
 * is not a regular file (a FIFO is not opened). */
REMAT_API remat_gas_format remat_gas_sniff_file(const char *path);

/* Reads a Cantera YAML or CHEMKIN file (the format as remat_gas_sniff_file
 * tells; a file that is neither is REMAT_ERR_PARSE) into a mechanism.
 * opt NULL: the defaults. Errors name file:line. */
REMAT_API remat_status remat_gas_read(const char *path, const remat_gas_options *opt, remat_mechanism **out);

/* K, the number of gas species of a mechanism remat_gas_read made; 0 for any
 * other mechanism (and NULL). */
REMAT_API int remat_gas_species_count(const remat_mechanism *m);

/* Emits the Jacobian J = d dydt / dy (S x S, J[i][j] = d dydt_i / d y_j) of a
 * gas mechanism's right-hand side into f, with dydt itself, for one state y
 * (S,) and one parameter set params (P,), both f64 values of f: the
 * mole-fraction columns in closed form (the rates' derivatives through the
 * reactant and product concentrations and the third-body concentration,
 * falloff included; each op is over all reactions at once) and the
 * temperature column in closed form too (Arrhenius, falloff, third bodies,
 * equilibrium constants, C = P/(RT) and the energy balance written out, no
 * forward-mode pass). Plain graph ops: reverse mode through
 * them is exact. REMAT_ERR_UNSUPPORTED (nothing emitted) for a mechanism
 * without the vector form (not a gas mechanism, PLOG, non-integer orders) or
 * other shapes and dtypes; Rodas5 then takes its Jacobian by forward mode. */
REMAT_API remat_status remat_gas_jacobian(remat_fn *f, const remat_mechanism *m, remat_val y, remat_val params,
                                          remat_val *J, remat_val *dydt);

/* The initial state y (K + 1 entries) for temperature T (K, > 0) and a
 * composition "H2=2,O2=1,N2=3.76": amounts of named species, normalised to
 * mole fractions (species not named: 0). Errors name the bad item. */
REMAT_API remat_status remat_gas_state(const remat_mechanism *m, double T, const char *composition, double y[]);

#ifdef __cplusplus
}
#endif
#endif
