/* pfr_cli.c — options shared by the `remat pfr` commands (see pfr_cli.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfr_cli.h"
#include "pfr_names.h"

#define MAX_STEPS 100000000 /* a profile of this many rows is already gigabytes */

#define HELP_SOURCE                                                                                            \
    "  --mechanism FILE   reaction mechanism file (remat/mechanism.h format); default the seed's\n"           \
    "                     built-in A -> B : k1, B -> C : k2 with k1 = 1, k2 = 0.5\n"                         \
    "  --init LIST        inlet concentrations, e.g. A=1,B=0; species not listed start at 0\n"               \
    "                     (default A=1 for the built-in mechanism; required with --mechanism)\n"             \
    "  --params LIST      parameter values, e.g. k1=1,k2=0.5; others keep their declared value\n"            \
    "  --cond LIST        condition values ('cond' lines of the mechanism), e.g. T=350; others\n"            \
    "                     keep their declared default; never differentiated or optimized\n"                \
    "  --length L         reactor length, the integration runs over z in [0, L] (default 10)\n"

#define HELP_ADJOINT                                                                                           \
    "  --adjoint A        how a gradient is taken: discrete (default: reverse mode through the\n"          \
    "                     steps under the checkpoint schedule), backsolve (the continuous\n"             \
    "                     adjoint, diffrax's BacksolveAdjoint: the adjoint ODE solved backwards,\n"       \
    "                     memory O(1) in the steps; unstable where the state's backward\n"                \
    "                     integration is) or interpolating (the continuous adjoint as CVODES's:\n"       \
    "                     the forward recomputed from at most 64 checkpoints and interpolated,\n"        \
    "                     stable on stiff problems; adaptive rodas5 there)\n"

const char pfr_cli_help_reactor[] = HELP_SOURCE
    "  --steps N          fixed integration steps over L (default 1000)\n"
    "  --dt H             or the largest step: ceil(L/H) equal steps (not with --steps)\n"
    "  --method M         euler (default), rk4, tsit5, dopri5 or rodas5 (stiff)\n" HELP_ADJOINT;

/* PFR_ADAPTIVE_DEFAULT's defaults (pfr simulate) */
const char pfr_cli_help_reactor_adaptive[] = HELP_SOURCE
    "  --steps N          fixed integration steps over L (default: 1000 with euler or rk4;\n"
    "                     adaptive steps otherwise, see above)\n"
    "  --dt H             or the largest step: ceil(L/H) equal steps (not with --steps)\n"
    "  --method M         euler (default for the built-in mechanism), rk4, tsit5 (default with\n"
    "                     --mechanism: adaptive), dopri5, rodas5 (stiff) or bdf (stiff, variable\n"
    "                     order, forward only: the fastest outlet of a large mechanism, no gradient)\n" HELP_ADJOINT;

/* the same without --adjoint (pfr ensemble: forward mode, which takes none) */
const char pfr_cli_help_reactor_forward[] = HELP_SOURCE
    "  --steps N          fixed integration steps over L (default: 1000 with euler or rk4;\n"
    "                     adaptive steps otherwise, see above)\n"
    "  --dt H             or the largest step: ceil(L/H) equal steps (not with --steps)\n"
    "  --method M         euler (default for the built-in mechanism), rk4, tsit5 (default with\n"
    "                     --mechanism: adaptive), dopri5 or rodas5 (stiff)\n";

const char pfr_cli_help_tol[] =
    "  --rtol R           adaptive: relative tolerance (default 1e-6)\n"
    "  --atol A           adaptive: absolute tolerance (default 1e-9)\n"
    "  --max-steps N      adaptive: attempts before the integration fails (default 4096)\n";

const char pfr_cli_help_goal[] =
    "  --maximize S       objective: maximize species S at the outlet, i.e. minimize -C_S(L)\n"
    "  --minimize S       objective: minimize C_S(L)\n";

int pfr_cli_option(pfr_cli *c, int code, const char *arg)
{
    switch (code) {
    case PFR_OPT_MECHANISM: c->mechanism = arg; cli_input("--mechanism", arg); return 1;
    case PFR_OPT_INIT: c->init = arg; return 1;
    case PFR_OPT_PARAMS: c->params = arg; return 1;
    case PFR_OPT_COND: c->cond = arg; return 1;
    case PFR_OPT_METHOD: c->method = arg; return 1;
    case PFR_OPT_MAXIMIZE: c->maximize = arg; return 1;
    case PFR_OPT_MINIMIZE: c->minimize = arg; return 1;
    case PFR_OPT_SCHEDULE: c->schedule = arg; return 1;
    case PFR_OPT_ADJOINT:
        if (remat_ode_adjoint_parse(arg, &(remat_ode_adjoint){0}) != REMAT_OK) {
            fprintf(stderr, "remat: --adjoint: %s\n", remat_last_error());
            return 0;
        }
        c->adjoint = arg;
        return 1;
    case PFR_OPT_ENERGY: c->energy = arg; return 1;
    case PFR_OPT_THERMO: c->thermo = arg; cli_input("--thermo", arg); return 1;
    case PFR_OPT_LENGTH:
        if (!pfr_cli_positive("--length", arg, "reactor length", &c->length))
            return 0;
        c->has_length = 1;
        return 1;
    case PFR_OPT_STEPS:
        if (!cli_int64("--steps", arg, 1, MAX_STEPS, &c->steps))
            return 0;
        c->has_steps = 1;
        return 1;
    case PFR_OPT_DT:
        if (!pfr_cli_positive("--dt", arg, "step", &c->dt))
            return 0;
        c->has_dt = 1;
        return 1;
    case PFR_OPT_RTOL:
    case PFR_OPT_ATOL:
    case PFR_OPT_MAX_STEPS:
        if (!pfr_cli_tol_arg(code, arg, &c->rtol, &c->atol, &c->max_steps))
            return 0;
        c->has_rtol |= code == PFR_OPT_RTOL;
        c->has_atol |= code == PFR_OPT_ATOL;
        c->has_tol = 1;
        return 1;
    default: return -1;
    }
}

int pfr_cli_tol_arg(int opt, const char *arg, double *rtol, double *atol, int64_t *max_steps)
{
    switch (opt) {
    case PFR_OPT_RTOL: return pfr_cli_positive("--rtol", arg, "relative tolerance", rtol);
    case PFR_OPT_ATOL: return pfr_cli_tolerance("--atol", arg, atol);
    case PFR_OPT_MAX_STEPS: return cli_int64("--max-steps", arg, 1, MAX_STEPS, max_steps);
    default: return -1;
    }
}

int pfr_cli_next(pfr_cli *c, int argc, char **argv, const struct option *opts)
{
    if (!c->reading) {
        optind = 1;
        opterr = 0; /* pfr_cli_bad_option says it, naming the command */
        c->reading = 1;
        if (!cli_options_once(argc, argv, opts, NULL))
            return PFR_CLI_BAD_VALUE;
    }
    int code;
    while ((code = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        int done = pfr_cli_option(c, code, optarg);
        if (done == 0)
            return PFR_CLI_BAD_VALUE;
        if (done == -1)
            return code;
    }
    return -1;
}

int pfr_cli_no_operands(const char *cmd, int argc, char **argv)
{
    if (optind < argc) {
        fprintf(stderr, "remat: %s: unexpected argument '%s'\n", cmd, argv[optind]);
        return 0;
    }
    return 1;
}

int pfr_cli_positive(const char *opt, const char *arg, const char *what, double *out)
{
    if (!cli_double(opt, arg, out))
        return 0;
    if (!(*out > 0)) {
        fprintf(stderr, "remat: %s: %s: the %s must be positive\n", opt, arg, what);
        return 0;
    }
    return 1;
}

int pfr_cli_tolerance(const char *opt, const char *arg, double *out)
{
    if (!cli_double(opt, arg, out))
        return 0;
    if (!(*out >= 0)) {
        fprintf(stderr, "remat: %s: %s: the absolute tolerance must be >= 0\n", opt, arg);
        return 0;
    }
    return 1;
}

const char pfr_cli_default_integrator[] = "adaptive tsit5 (rk4 with --steps or --dt)";

int pfr_cli_adaptive(const char *method, int fixed, int tol, remat_ode_method *out, bool *adaptive)
{
    remat_ode_method m = fixed ? REMAT_ODE_RK4 : REMAT_ODE_TSIT5;
    if (method && remat_ode_method_parse(method, &m) != REMAT_OK) {
        fprintf(stderr, "remat: --method: %s\n", remat_last_error());
        return 0;
    }
    if (m == REMAT_ODE_BDF && fixed) {
        fprintf(stderr, "remat: --method bdf chooses its own steps (adaptive only): --steps and --dt do not apply\n");
        return 0;
    }
    *adaptive = !fixed && remat_ode_method_adaptive(m);
    if (tol && !*adaptive) {
        fprintf(stderr, "remat: --rtol, --atol and --max-steps apply to adaptive stepping (--method tsit5, dopri5, rodas5 or "
                        "bdf without --steps or --dt); %s\n",
                fixed ? "--steps/--dt ask for fixed steps" : "euler and rk4 have no error estimate");
        return 0;
    }
    *out = m;
    return 1;
}

void pfr_cli_names(const remat_mechanism *m, int params, char *buf, int len)
{
    int n = params ? remat_mechanism_param_count(m) : remat_mechanism_species_count(m), used = 0;
    buf[0] = 0;
    if (n == 0)
        snprintf(buf, (size_t)len, "none");
    for (int i = 0; i < n && used < len; i++)
        used += snprintf(buf + used, (size_t)(len - used), "%s%s", i ? ", " : "",
                         params ? remat_mechanism_param_name(m, i) : remat_mechanism_species_name(m, i));
}

int pfr_cli_negative_allowed(const remat_mechanism *m, int i)
{
    double lo = remat_mechanism_param_lo(m, i), hi = remat_mechanism_param_hi(m, i);
    /* "in [-1, 1]" or "in [-inf, 5]": declared; no bounds at all read as -inf too;
     * a network's weight takes either sign */
    return (lo < 0 && (isfinite(lo) || isfinite(hi))) || remat_mechanism_param_net(m, i) >= 0;
}

int pfr_cli_assign(const char *opt, const char *text, const remat_mechanism *m, int params, double *values)
{
    int n = params ? remat_mechanism_param_count(m) : remat_mechanism_species_count(m);
    const char *what = params ? "parameter" : "species";
    char names[1024];
    pfr_cli_names(m, params, names, sizeof names);
    char *seen = calloc((size_t)n + 1, 1), *copy = strdup(text);
    int ok = seen && copy;
    if (!ok)
        fprintf(stderr, "remat: %s: out of memory\n", opt);
    char *p = copy;
    while (ok) {
        char *item = p, *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        char *eq = strchr(item, '=');
        const char *c = item;
        if (isalpha((unsigned char)*c) || *c == '_')
            while (isalnum((unsigned char)*c) || *c == '_' || (params && strchr(".[]", *c) && *c))
                c++; /* a network's weight: f.Dense_0.kernel[0][1] */
        if (!eq || c == item || c != eq || !eq[1]) {
            fprintf(stderr, "remat: %s: '%s' is not NAME=VALUE (e.g. %s %s)\n", opt, item, opt,
                    params ? "k1=1,k2=0.5" : "A=1,B=0");
            ok = 0;
            break;
        }
        *eq = 0;
        const char *val = eq + 1;
        int i = params ? remat_mechanism_param_find(m, item) : remat_mechanism_species_find(m, item);
        if (i < 0) {
            int other = params ? remat_mechanism_species_find(m, item) : remat_mechanism_param_find(m, item);
            if (other >= 0)
                fprintf(stderr, "remat: %s: '%s' is a %s of %s, not a %s (%s: %s)\n", opt, item,
                        params ? "species" : "parameter", remat_mechanism_source(m), what,
                        params ? "parameters" : "species", names);
            else
                fprintf(stderr, "remat: %s: '%s' is not a %s of %s (%s: %s)\n", opt, item, what,
                        remat_mechanism_source(m), params ? "parameters" : "species", names);
            ok = 0;
            break;
        }
        if (seen[i]) {
            fprintf(stderr, "remat: %s: '%s' is given twice\n", opt, item);
            ok = 0;
            break;
        }
        seen[i] = 1;
        const char *end;
        double v = 0;
        cli_num k = cli_strtod(val, &end, &v);
        if (k == CLI_NUM_OK && *end)
            k = CLI_NUM_BAD;
        if (k != CLI_NUM_OK) {
            fprintf(stderr, "remat: %s: %s=%s: '%s' %s\n", opt, item, val, val, cli_num_why(k));
            ok = 0;
            break;
        }
        if (!params && v < 0) {
            fprintf(stderr, "remat: %s: %s=%s: a concentration cannot be negative\n", opt, item, val);
            ok = 0;
            break;
        }
        if (params && v < 0 && !pfr_cli_negative_allowed(m, i)) {
            fprintf(stderr,
                    "remat: %s: %s=%s: a parameter cannot be negative unless %s declares a negative lower bound "
                    "for it (e.g. 'param %s = ... in [-1, 1]')\n",
                    opt, item, val, remat_mechanism_source(m), item);
            ok = 0;
            break;
        }
        if (params) {
            double lo = remat_mechanism_param_lo(m, i), hi = remat_mechanism_param_hi(m, i);
            if (v < lo || v > hi) {
                fprintf(stderr, "remat: %s: %s=%s is outside the bounds [%g, %g] that %s declares for it\n", opt,
                        item, val, lo, hi, remat_mechanism_source(m));
                ok = 0;
                break;
            }
        }
        values[i] = v;
        if (!comma)
            break;
        p = comma + 1;
    }
    free(seen);
    free(copy);
    return ok;
}

int pfr_cli_bad_option(const char *cmd, int code, char **argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    if (code == ':')
        fprintf(stderr, "remat: %s: option '%s' needs a value\n", cmd, arg);
    else if (!strncmp(arg, "--", 2) && strchr(arg, '='))
        fprintf(stderr, "remat: %s: option '%.*s' takes no value\n", cmd, (int)(strchr(arg, '=') - arg), arg);
    else if (optopt && arg[0] == '-' && arg[1] != '-')
        fprintf(stderr, "remat: %s: unknown option '-%c'\n", cmd, optopt);
    else
        fprintf(stderr, "remat: %s: unknown option '%s'\n", cmd, arg);
    fprintf(stderr, "('remat %s --help' lists the options)\n", cmd);
    return 2;
}

static int find_species(const char *opt, const char *name, const remat_mechanism *m, int *out)
{
    *out = remat_mechanism_species_find(m, name);
    if (*out >= 0)
        return 1;
    char names[1024];
    pfr_cli_names(m, 0, names, sizeof names);
    fprintf(stderr, "remat: %s: '%s' is not a species of %s (species: %s)\n", opt, name, remat_mechanism_source(m),
            names);
    return 0;
}

int pfr_cli_setup(const pfr_cli *c, pfr_goal_need goal, int params_start, pfr_setup *s)
{
    const remat_pfr_seed_problem *seed = remat_pfr_seed();
    memset(s, 0, sizeof *s);
    if (c->has_steps && c->has_dt) {
        fprintf(stderr, "remat: --steps and --dt exclude each other: give the number of steps or the step size\n");
        return 0;
    }
    if (c->maximize && c->minimize) {
        fprintf(stderr, "remat: --maximize and --minimize exclude each other\n");
        return 0;
    }
    remat_ode_method method = seed->method;
    bool adaptive = false;
    int fixed = c->has_steps || c->has_dt;
    int gas = c->mechanism && pfr_gas_wanted(c);
    if (!gas && !pfr_gas_options_unused(c))
        return 0;
    if (c->adaptive_ok == PFR_ADAPTIVE_ASKED && c->has_tol && !c->method) {
        fprintf(stderr, "remat: --rtol, --atol and --max-steps apply to adaptive stepping: add --method tsit5, "
                        "dopri5 or rodas5 (the default is %lld fixed %s steps)\n",
                (long long)seed->steps, remat_ode_method_name(seed->method));
        return 0;
    }
    if ((c->adaptive_ok == PFR_ADAPTIVE_DEFAULT && (c->mechanism || c->method || c->has_tol)) ||
        (c->adaptive_ok == PFR_ADAPTIVE_ASKED && (c->method || gas))) {
        /* gas mechanisms are stiff: rodas5 unless --method says otherwise */
        if (!pfr_cli_adaptive(c->method ? c->method : gas && !fixed ? "rodas5" : NULL, fixed, c->has_tol, &method,
                              &adaptive))
            return 0;
        if (fixed && !c->method)
            method = seed->method; /* --steps/--dt alone: the fixed default stays Euler */
    } else if (c->method && remat_ode_method_parse(c->method, &method) != REMAT_OK) {
        fprintf(stderr, "remat: --method: %s\n", remat_last_error());
        return 0;
    } else if (method == REMAT_ODE_BDF) { /* fixed steps asked (pfr ensemble, or --steps/--dt) */
        fprintf(stderr, "remat: --method bdf chooses its own steps (adaptive only): %s\n",
                fixed ? "--steps and --dt do not apply" : "this command takes fixed steps; use rodas5");
        return 0;
    } else if (!c->method && gas) {
        method = REMAT_ODE_RODAS5; /* fixed steps (pfr ensemble): a gas mechanism is stiff */
    }
    remat_schedule_spec sched = {.kind = REMAT_SCHED_BINOMIAL, .snapshots = 10};
    if (c->schedule && remat_schedule_parse(c->schedule, &sched) != REMAT_OK) {
        fprintf(stderr, "remat: --schedule: %s\n", remat_last_error());
        return 0;
    }
    remat_schedule_format(&sched, s->schedule, sizeof s->schedule);
    s->builtin = c->mechanism == NULL;
    remat_status st = gas ? REMAT_OK
                      : s->builtin ? remat_mechanism_parse_string(seed->mechanism, "built-in A->B->C", &s->mech)
                                   : remat_mechanism_parse_file(c->mechanism, &s->mech);
    if (gas && !pfr_gas_load(c, s))
        return 0;
    if (st != REMAT_OK) {
        fprintf(stderr, "remat: --mechanism: %s\n", remat_last_error());
        return 0;
    }
    s->name = remat_mechanism_source(s->mech);
    pfr_names_warnings(s->mech);
    s->S = remat_mechanism_species_count(s->mech);
    s->P = remat_mechanism_param_count(s->mech);
    s->inlet = calloc((size_t)s->S + 1, sizeof *s->inlet);
    s->params = calloc((size_t)s->P + 1, sizeof *s->params);
    s->conds = calloc((size_t)remat_mechanism_cond_count(s->mech) + 1, sizeof *s->conds);
    if (!s->inlet || !s->params || !s->conds) {
        fprintf(stderr, "remat: out of memory\n");
        goto fail;
    }
    char names[1024];
    if (gas) {
        remat_mechanism_param_values(s->mech, s->params);
        if (!pfr_gas_inlet(c, s))
            goto fail;
    } else if (c->init) {
        if (!pfr_cli_assign("--init", c->init, s->mech, 0, s->inlet))
            goto fail;
    } else if (s->builtin) {
        memcpy(s->inlet, seed->inlet, sizeof *s->inlet * (size_t)s->S);
    } else {
        pfr_cli_names(s->mech, 0, names, sizeof names);
        fprintf(stderr, "remat: --init is required with --mechanism: give the inlet concentrations, e.g. --init "
                        "%s=1 (species of %s: %s)\n",
                remat_mechanism_species_name(s->mech, 0), s->name, names);
        goto fail;
    }
    if (s->builtin && params_start)
        memcpy(s->params, seed->start, sizeof *s->params * (size_t)s->P);
    else if (!gas)
        remat_mechanism_param_values(s->mech, s->params);
    if (c->params && !pfr_cli_assign("--params", c->params, s->mech, 1, s->params))
        goto fail;
    for (int k = 0; k < remat_mechanism_cond_count(s->mech); k++)
        s->conds[k] = remat_mechanism_cond_value(s->mech, k);
    if (!gas && c->cond && !pfr_names_conds("--cond", c->cond, s->mech, s->conds)) /* gas: T and P, pfr_gas.c */
        goto fail;

    remat_pfr_options *o = &s->opt;
    o->method = method;
    o->length = c->has_length ? c->length : seed->length;
    o->inlet = s->inlet;
    o->conds = s->conds;
    o->schedule = sched;
    if (c->adjoint)
        remat_ode_adjoint_parse(c->adjoint, &o->adjoint); /* checked by pfr_cli_option */
    if (adaptive) {
        o->adaptive = true;
        /* gas mechanisms: mole fractions down to 1e-14 matter (radicals before ignition) */
        o->rtol = c->has_rtol ? c->rtol : gas ? PFR_GAS_RTOL : PFR_CLI_RTOL;
        o->atol = c->has_atol ? c->atol : gas ? PFR_GAS_ATOL : PFR_CLI_ATOL;
        o->max_steps = c->max_steps ? c->max_steps : gas ? PFR_GAS_MAX_STEPS : 0;
    } else if (c->has_dt) {
        double n = ceil(o->length / c->dt * (1 - 1e-9));
        if (!(n <= MAX_STEPS)) {
            fprintf(stderr, "remat: --dt: %g over --length %g is %.3g steps (at most %d)\n", c->dt, o->length, n,
                    MAX_STEPS);
            goto fail;
        }
        o->dt = c->dt;
    } else {
        o->steps = c->has_steps ? c->steps : seed->steps;
    }
    const char *sp = c->maximize ? c->maximize : c->minimize;
    if (sp) {
        if (!find_species(c->maximize ? "--maximize" : "--minimize", sp, s->mech, &o->species))
            goto fail;
        o->goal = c->maximize ? REMAT_PFR_MAXIMIZE : REMAT_PFR_MINIMIZE;
    } else if (s->builtin) {
        o->goal = seed->goal;
        o->species = remat_mechanism_species_find(s->mech, seed->species);
    } else if (goal == PFR_GOAL_REQUIRED) {
        pfr_cli_names(s->mech, 0, names, sizeof names);
        fprintf(stderr, "remat: --maximize or --minimize is required with --mechanism: which outlet "
                        "concentration is the objective? (species of %s: %s)\n",
                s->name, names);
        goto fail;
    }
    if (method == REMAT_ODE_BDF && (sp || goal == PFR_GOAL_REQUIRED || c->adjoint)) {
        fprintf(stderr, "remat: --method bdf integrates forward only: %s needs a gradient, which needs rodas5 (or "
                        "another method)\n",
                sp ? (c->maximize ? "--maximize" : "--minimize") : c->adjoint ? "--adjoint" : "this command");
        goto fail;
    }
    if (method == REMAT_ODE_BDF)
        o->goal = REMAT_PFR_NO_GOAL; /* the built-in mechanism's default objective: no gradient with bdf */
    if (goal == PFR_GOAL_REQUIRED && s->P == 0) {
        fprintf(stderr, "remat: --mechanism: %s declares no parameters (param NAME = VALUE) to differentiate\n",
                s->name);
        goto fail;
    }
    /* the model's own checks, as a last line */
    remat_pfr *r;
    if (remat_pfr_new(s->mech, o, &r) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", remat_last_error());
        goto fail;
    }
    remat_pfr_free(r);
    return 1;
fail:
    pfr_setup_free(s);
    return 0;
}

void pfr_setup_free(pfr_setup *s)
{
    remat_mechanism_free(s->mech);
    free(s->inlet);
    free(s->params);
    free(s->conds);
    memset(s, 0, sizeof *s);
}
