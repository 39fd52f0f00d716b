/* mlp_budget.c — `remat mlp train --memory-budget`: the candidate networks (checkpoint policies, unrolled or
 * scanned under schedules) and the library's search for the fastest whose whole step fits (mlp_cli.h). */
#include <stdlib.h>
#include <string.h>

#include "mlp_cli.h"

#define MAX_CANDIDATES 96

static const char *const policy_names[] = {"none", "dots_with_no_batch_dims_saveable", "dots_saveable",
                                           "everything_saveable", "nothing_saveable"};

/* the schedules tried for L scanned blocks, after the unrolled network ("" in
 * the list): store-all, per-step, periodic:K and binomial:S for K, S powers of
 * two below L, two-level */
static int schedule_list(int64_t layers, char names[][48], int max)
{
    int n = 0;
    snprintf(names[n++], 48, "%s", "");
    snprintf(names[n++], 48, "%s", "store-all");
    snprintf(names[n++], 48, "%s", "per-step");
    for (int64_t k = 2; k < layers && n < max; k *= 2)
        snprintf(names[n++], 48, "periodic:%lld", (long long)k);
    if (layers > 2 && n < max)
        snprintf(names[n++], 48, "%s", "two-level");
    for (int64_t s = 1; s < layers && n < max; s *= 2)
        snprintf(names[n++], 48, "binomial:%lld", (long long)s);
    return n;
}

void mlp_budget_describe(const mlp_net_config *c, const char *policy, char *out, size_t len)
{
    if (c->scanned) {
        char s[48];
        remat_schedule_format(&c->schedule, s, sizeof s);
        snprintf(out, len, "policy %s, scanned with schedule %s", policy, s);
    } else
        snprintf(out, len, "policy %s, unrolled", policy);
}

int mlp_budget_choose(const mlp_net_config *base, const char *policy, int64_t features, int64_t budget,
                      const remat_nn_train_options *o, mlp_budget_result *res)
{
    char sched[24][48];
    int ns = schedule_list(base->layers, sched, 24), np = policy ? 1 : 5, n = 0, ok = 1;
    mlp_net_config cfg[MAX_CANDIDATES];
    const char *pol[MAX_CANDIDATES];
    remat_nn_module *mods[MAX_CANDIDATES] = {0};
    remat_nn_params *params[MAX_CANDIDATES] = {0};
    size_t peaks[MAX_CANDIDATES];
    double secs[MAX_CANDIDATES];
    remat_status st = REMAT_OK;
    for (int i = 0; i < np && st == REMAT_OK; i++)
        for (int j = 0; j < ns && n < MAX_CANDIDATES && st == REMAT_OK; j++) {
            mlp_net_config c = *base;
            pol[n] = policy ? policy : policy_names[i];
            if (!mlp_parse_policy("--policy", pol[n], &c.policy, &c.has_policy))
                return 0;
            c.scanned = sched[j][0] != 0;
            if (c.scanned && remat_schedule_parse(sched[j], &c.schedule) != REMAT_OK)
                st = REMAT_ERR_VALUE;
            cfg[n] = c;
            mods[n] = st == REMAT_OK ? mlp_net_make(&c) : NULL;
            st = mods[n] ? remat_nn_init(mods[n], remat_prng_key_from_seed(0), REMAT_F32, 1, &features, &params[n])
                         : REMAT_ERR_VALUE;
            n++;
        }
    remat_nn_budget_choice ch;
    remat_nn_train_options bo = *o;
    bo.memory_budget = budget;
    /* the network is the same on every rank, so is a failure to build it */
    if (st == REMAT_OK)
        st = remat_nn_budget_choose(n, (const remat_nn_module *const *)mods, params, features, base->classes, &bo,
                                    3, peaks, secs, &ch);
    if (st == REMAT_ERR_BUDGET && ch.smallest >= 0) {
        char what[160];
        mlp_budget_describe(&cfg[ch.smallest], pol[ch.smallest], what, sizeof what);
        if (remat_dist_is_root(o->dist))
            fprintf(stderr, "remat: --memory-budget: %lld bytes is too small for the training step: the smallest "
                            "predicted peak of the %d candidates is %zu bytes (%s); give at least %zu\n",
                    (long long)budget, n, ch.smallest_bytes, what, ch.smallest_bytes);
        ok = 0;
    } else if (st != REMAT_OK) {
        if (remat_dist_is_root(o->dist))
            fprintf(stderr, "remat: --memory-budget: %s\n", remat_last_error());
        ok = 0;
    }
    if (ok) {
        int fit = 0;
        for (int i = 0; i < n; i++)
            fit += peaks[i] <= (size_t)budget;
        *res = (mlp_budget_result){.cfg = cfg[ch.index], .policy = pol[ch.index], .peak = ch.peak_bytes,
                                   .seconds = ch.seconds, .candidates = n, .fitting = fit};
    }
    for (int i = 0; i < n; i++) {
        remat_nn_params_free(params[i]);
        remat_nn_module_free(mods[i]);
    }
    return ok;
}
