/*
 * gas_impl.h (internal) — gas-phase mechanisms read from Cantera YAML or
 * CHEMKIN-II input (remat/gas.h).
 *
 * Both readers fill one description (gas_desc: species with NASA 7-coefficient
 * thermo, reactions with their rate parameterisation, every number in SI
 * units with the mole as quantity: m, s, mol, J, Pa, K); gas_build.c turns
 * the description into an ordinary remat_mechanism (lets, ODE right-hand
 * sides, params), so everything that takes a mechanism takes a gas one.
 *
 *   gas_yaml.c      Cantera YAML through libyaml
 *   gas_ck.c        CHEMKIN-II: ELEMENTS, SPECIES, THERMO, REACTIONS
 *   gas_desc.c      what both share: "2 H + O2 (+M) <=> ...", "cm^3/mol/s",
 *                   "kcal/mol", "atm" to SI; elements, each reaction's
 *                   element balance (Cantera's checkBalance)
 *   gas_dup.c       duplicate reactions checked (Cantera's checkDuplicates)
 *   gas_build.c     the description to a mechanism
 */
#ifndef REMAT_MODELS_KINETICS_GAS_IMPL_H
#define REMAT_MODELS_KINETICS_GAS_IMPL_H

#include "core/arena.h"
#include "models/kinetics/mechanism_impl.h"
#include "remat/gas.h"
#include "remat/graph.h"

/* Constants as Cantera 3 defines them (ct_defs.h), per mole. */
#define GAS_AVOGADRO 6.02214076e23
#define GAS_R 8.31446261815324 /* J/mol/K: Boltzmann 1.380649e-23 x Avogadro */
#define GAS_ONE_ATM 101325.0

typedef struct {
    double A, b, Ea; /* k = A T^b exp(-Ea / (R T)); A in (m^3/mol)^(n-1)/s, Ea in J/mol */
} gas_arrhenius;

typedef enum {
    GAS_ELEMENTARY = 0,
    GAS_THREE_BODY,
    GAS_FALLOFF,
    GAS_CHEM_ACT,  /* chemically activated */
    GAS_PLOG,
    GAS_KIND_COUNT
} gas_kind;

typedef enum { GAS_F_LINDEMANN = 0, GAS_F_TROE, GAS_F_SRI } gas_falloff;

typedef struct {
    int species;
    double nu; /* > 0 */
} gas_term;

typedef struct {
    int line;
    const char *eq;    /* the equation as written (messages) */
    gas_kind kind;
    gas_term *side[2]; /* reactants, products (repeats summed) */
    int nside[2];
    int reversible;
    int duplicate;
    gas_arrhenius k;    /* elementary, three-body; falloff: high-P; chem. act.: low-P */
    gas_arrhenius k2;   /* falloff: low-P; chem. act.: high-P */
    int has_rev;        /* explicit reverse (CHEMKIN REV) */
    gas_arrhenius rev;
    gas_falloff ff;
    double troe[4];     /* A, T3, T1, T2 */
    int troe_t2;        /* T2 given */
    double sri[5];      /* a, b, c, d, e */
    double *eff;        /* [nspecies] collision efficiencies (three-body, falloff), NULL: all default */
    double default_eff;
    int collider;       /* (+AR): that species alone is the third body; -1: M */
    int nplog;
    double *plog_p;     /* [nplog] Pa, ascending, repeats allowed (summed) */
    gas_arrhenius *plog_k;
    int norders;        /* explicit orders (FORD / orders) */
    gas_term *orders;
} gas_reaction;

typedef struct {
    const char *name;
    int line;
    int nranges;        /* 1 or 2 */
    double tmin, tmid, tmax;
    double lo[7], hi[7]; /* lo: [tmin, tmid]; hi: [tmid, tmax] (nranges 2) */
    int has_thermo;
    int natoms;
    struct gas_atom { int el; double n; } *atoms; /* element composition: element index, count */
} gas_species;

typedef struct {
    remat_arena arena;
    const char *file;   /* for messages */
    gas_species *sp;
    int nsp, capsp;
    gas_reaction *rx;
    int nrx, caprx;
    const char **el;    /* elements (ELEMENTS section, the phase's 'elements', else as met) */
    int nel, capel;
    int el_declared;    /* the file listed its elements: others are an error */
} gas_desc;

/* REMAT_ERR_PARSE "file:line: message". */
remat_status gas_error(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
remat_status gas_nomem(const char *file);

int gas_find_species(const gas_desc *d, const char *name, size_t len); /* -1: none */
gas_species *gas_add_species(gas_desc *d);                          /* zeroed; NULL: out of memory */
gas_reaction *gas_add_reaction(gas_desc *d);                        /* zeroed, collider -1, default_eff 1 */
/* An element of the list (case-insensitive, as CHEMKIN's symbols): its index, -1 none */
int gas_find_element(const gas_desc *d, const char *name, size_t len);
remat_status gas_declare_element(gas_desc *d, const char *file, int line, const char *name, size_t len);
/* Adds n atoms of element name to sp's composition; an element not declared
 * (d->el_declared) is an error naming the species and file:line. */
remat_status gas_species_atoms(gas_desc *d, gas_species *sp, const char *file, int line, const char *name,
                               size_t len, double n);
/* Every reaction's elements balance, as Cantera's Reaction::checkBalance
 * (|products - reactants| <= 1e-4 (products + reactants) per element), else
 * an error naming file:line, the reaction as written and the element's
 * counts on both sides (gas_desc.c). */
remat_status gas_check_balance(const gas_desc *d);

/* Parses a reaction equation into r->side, r->reversible; for kind
 * GAS_THREE_BODY / GAS_FALLOFF / GAS_CHEM_ACT the "+ M" or "(+M)" is
 * checked and removed; *has_m says what the equation had: 0 none, 1 "+ M",
 * 2 "(+M)" or "(+SPECIES)" (r->collider set for a species). */
remat_status gas_parse_equation(gas_desc *d, gas_reaction *r, const char *eq, size_t n, int *has_m);

/* Units. A unit system: factors to SI per dimension. */
typedef struct {
    double length, quantity, time, energy, pressure, act_energy; /* act_energy: J/mol per unit; 0: energy/quantity */
    int act_kelvin; /* activation energies in K (Ea/R) */
} gas_units;
void gas_units_default(gas_units *u); /* Cantera's: m, kmol, s, J, Pa */
/* The SI factor of a unit expression ("cm^3/mol/s", "kcal/mol", "atm");
 * *kelvin = 1 for "K" alone. 0 with an error naming it. */
remat_status gas_unit_factor(const char *file, int line, const char *text, double *factor, int *kelvin);
/* Sets one dimension of u from "length: cm" etc. */
remat_status gas_units_set(const char *file, int line, gas_units *u, const char *dim, const char *unit);

/* Reaction order of the forward rate expression (reactants or explicit orders),
 * plus one for a third body; the factor that takes A to SI. */
double gas_reactant_order(const gas_reaction *r);
double gas_a_factor(const gas_units *u, double order);
/* v in SI: v * factor, where a factor within 1e-12 of a power of ten 10^k
 * (|k| <= 22; cm^3 = 0.01^3 comes out 1.0000000000000002e-6) is one
 * multiplication or division by the exact 10^|k|, so that 1.2e17 cm^6/mol^2/s
 * is 120000 m^6/mol^2/s, the correctly rounded SI value of what the user
 * wrote, and not 120000.00000000004 */
double gas_si(double v, double factor);

/* The vectorised lowering (gas_lower.c): the mechanism as constant vectors
 * and matrices over species (K) and reactions (N), built with it
 * (gas_plan_build) and kept in its arena. vec = 0 where it does not apply
 * (PLOG, non-integer orders or coefficients, more than GAS_SLOTS reactant
 * or product molecules): the expression DAG is lowered as for .mech files. */
#define GAS_SLOTS 4
typedef struct gas_plan {
    int K, N, vec, adiabatic;
    int R, Pn;                   /* reactant and product slots used */
    double *th[2][3];            /* [lo/hi][h, s, cp]: K x 7 rows over (1, T, T^2, T^3, T^4, 1/T, log T) */
    double *dcp[2];              /* [lo/hi] K x 7 rows of d(cp/R)/dT over the same powers */
    double *tmid;                /* [K]; one range: +inf */
    double *rsel[GAS_SLOTS], *rpad[GAS_SLOTS]; /* N x K 0/1 selection, [N] 1 for an empty slot */
    double *psel[GAS_SLOTS], *ppad[GAS_SLOTS];
    double *nrs, *nps;           /* [N] reactant and product slots filled: rprod and pprod go as C^n */
    double *nut;                 /* K x N net stoichiometry */
    double *nueq, *dneq;         /* N x K, [N]: reactions whose reverse comes from equilibrium; else 0 */
    double *revmask;             /* [N] 1 if reversible */
    double *eff;                 /* N x K third-body efficiencies (a collider: 1 for it; none: 0) */
    double *effd, *effx;         /* [N] default efficiency (0 for a collider), N x K eff - effd */
    double *is_tb, *is_fo, *is_ca, *is_f, *has_rev; /* [N] masks; is_f: falloff or chemically activated */
    /* The falloff and chemically activated reactions alone (nf of them, reaction fidx[j] at j):
     * their Pr, F and derivatives are computed over these nf entries, not all N reactions
     * (GRI-Mech 3.0: 29 of 325), gathered by fgat (nf x N, 0/1) and put back by fsct (N x nf). */
    int nf, *fidx;
    double *fgat, *fsct;
    double *f_is_fo, *f_is_ca, *is_troe, *is_sri; /* [nf] masks */
    double *k2A, *k2b, *k2Ea;    /* [nf] falloff low-P / chem. act. high-P */
    double *troeA, *rt3, *rt1, *t2, *w2; /* [nf] */
    double *sa, *sb, *scinv, *scw, *sd, *se; /* [nf] */
    double *revA, *revb, *revEa;
    /* [N] 1 for an explicit reverse on a three-body reaction: k_r [M], the forward's M (Cantera's
     * ck2yaml; a falloff reaction's explicit reverse is bare Arrhenius, as there) */
    double *rev_tb;
    /* how many reactions of each form: the lowering leaves out the parts of forms the mechanism
     * lacks (GRI-Mech 3.0: no SRI, chemically activated or explicit reverse reactions) */
    int n_tb, n_fo, n_ca, n_troe, n_sri, n_rev, n_rev_tb;
} gas_plan;
remat_status gas_plan_build(const gas_desc *d, int adiabatic, remat_arena *a, gas_plan **out);
/* dydt for y (S,) and params (P,) of dtype f64 by the plan */
remat_status gas_lower_rhs(remat_fn *f, const gas_plan *g, remat_val y, remat_val params, remat_val *dydt);
/* J = d dydt / dy (S x S) and dydt for y (S,) and params (P,) of dtype f64, in closed form
 * (remat_gas_jacobian) */
remat_status gas_lower_jac(remat_fn *f, const gas_plan *g, remat_val y, remat_val params, remat_val *J,
                           remat_val *dydt);

/* Readers. */
remat_status gas_read_yaml(gas_desc *d, const char *text, size_t n, const remat_gas_options *opt);
remat_status gas_read_chemkin(gas_desc *d, const char *text, size_t n, const char *thermo_file,
                              const char *thermo, size_t nthermo);
/* Undeclared duplicate reactions (the same equation and form twice, not both
 * marked) and declared ones without a twin: an error naming file:line, as
 * Cantera's checkDuplicates (gas_dup.c). how: the mark in the file's format. */
remat_status gas_check_duplicates(const gas_desc *d, const char *how);
/* Description -> mechanism (thermo and reactions checked). */
remat_status gas_build(const gas_desc *d, const remat_gas_options *opt, remat_mechanism **out);

#endif
