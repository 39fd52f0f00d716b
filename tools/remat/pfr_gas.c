/* pfr_gas.c — the `remat pfr` options of gas mechanisms (remat/gas.h):
 * Cantera YAML or CHEMKIN files, --energy, --thermo, --cond T=..,P=..,
 * and --init as a composition normalised to mole fractions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfr_cli.h"

const char pfr_cli_help_gas[] =
    "  gas mechanisms (a Cantera YAML or CHEMKIN file as --mechanism; remat/gas.h):\n"
    "  --thermo FILE      CHEMKIN thermo data (default: the THERMO section of the mechanism)\n"
    "  --energy E         adiabatic (default: energy balance from the thermo) or isothermal\n"
    "  --cond T=..,P=..   initial temperature (K, required) and pressure (Pa, default 101325)\n"
    "  --init LIST        composition, e.g. H2=2,O2=1,N2=3.76 (amounts, normalised to mole fractions);\n"
    "                     --length is the residence time in s; the state is the mole fractions and T;\n"
    "                     parameters P, m<i> (rate multiplier of reaction i), A<i>, b<i>, Ea<i> (SI, mol,\n"
    "                     J/mol); default method adaptive rodas5, --rtol 1e-8 --atol 1e-14 --max-steps 100000\n";

int pfr_gas_wanted(const pfr_cli *c)
{
    return c->thermo || remat_gas_sniff_file(c->mechanism) != REMAT_GAS_FORMAT_NONE;
}

int pfr_gas_options_unused(const pfr_cli *c)
{
    const char *opt = c->energy ? "--energy" : c->thermo ? "--thermo" : NULL; /* --cond: the mechanism's own conditions */
    if (!opt)
        return 1;
    fprintf(stderr, "remat: %s applies to gas mechanisms (a Cantera YAML or CHEMKIN file as --mechanism)%s\n", opt,
            c->mechanism ? "; this one is in remat's own format" : "");
    return 0;
}

int pfr_gas_read(const char *path, const char *energy, const char *thermo, remat_mechanism **out)
{
    remat_gas_options o = {.energy = REMAT_GAS_ADIABATIC, .thermo = thermo};
    if (energy && strcmp(energy, "isothermal") == 0)
        o.energy = REMAT_GAS_ISOTHERMAL;
    else if (energy && strcmp(energy, "adiabatic") != 0) {
        fprintf(stderr, "remat: --energy: '%s': expected adiabatic or isothermal\n", energy);
        return 0;
    }
    if (remat_gas_read(path, &o, out) != REMAT_OK) {
        fprintf(stderr, "remat: --mechanism: %s\n", remat_last_error());
        return 0;
    }
    return 1;
}

int pfr_gas_load(const pfr_cli *c, pfr_setup *s)
{
    return pfr_gas_read(c->mechanism, c->energy, c->thermo, &s->mech);
}

int pfr_gas_conds(const char *cond, const remat_mechanism *m, double *T, double *params)
{
    const char *p = cond;
    while (*p) {
        size_t len = strcspn(p, ",");
        char item[128];
        snprintf(item, sizeof item, "%.*s", (int)(len < 127 ? len : 127), p);
        char *eq = strchr(item, '=');
        double v;
        if (!eq) {
            fprintf(stderr, "remat: --cond: '%s': expected NAME=VALUE (T=1000,P=101325)\n", item);
            return 0;
        }
        *eq = 0;
        if (!cli_double("--cond", eq + 1, &v))
            return 0;
        if (strcmp(item, "T") == 0 && v > 0 && isfinite(v))
            *T = v;
        else if (strcmp(item, "P") == 0 && v > 0 && isfinite(v))
            params[remat_mechanism_param_find(m, "P")] = v;
        else if (strcmp(item, "T") == 0 || strcmp(item, "P") == 0) {
            fprintf(stderr, "remat: --cond: %s=%s: must be positive and finite\n", item, eq + 1);
            return 0;
        } else {
            fprintf(stderr, "remat: --cond: '%s': a gas mechanism's conditions are T (K) and P (Pa)\n", item);
            return 0;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return 1;
}

int pfr_gas_inlet(const pfr_cli *c, pfr_setup *s)
{
    double T = NAN;
    if (c->cond && !pfr_gas_conds(c->cond, s->mech, &T, s->params))
        return 0;
    if (isnan(T)) {
        fprintf(stderr, "remat: --cond T=... is required with a gas mechanism: the initial temperature in K "
                        "(e.g. --cond T=1000,P=101325)\n");
        return 0;
    }
    if (!c->init) {
        fprintf(stderr, "remat: --init is required with --mechanism: give the composition, e.g. --init %s=1 "
                        "(amounts, normalised to mole fractions)\n",
                remat_mechanism_species_name(s->mech, 0));
        return 0;
    }
    if (remat_gas_state(s->mech, T, c->init, s->inlet) != REMAT_OK) {
        fprintf(stderr, "remat: --init: %s\n", remat_last_error());
        return 0;
    }
    return 1;
}
