/* mlp_train_out.c — `remat mlp train`'s text and JSON reports and its weights file (mlp_train.h). */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "mlp_train.h"

/* the rows the plan's program takes: the batch, or its largest micro-shard */
static int64_t plan_rows(const mlp_train_report *r)
{
    return r->o.shards > 0 ? (r->o.batch + r->o.shards - 1) / r->o.shards : r->o.batch;
}

void mlp_train_print_header(const mlp_train_report *r)
{
    const mlp_net_config *c = &r->cfg;
    printf("data %s: %lld rows, %lld features, %lld classes; %s; %lld train, %lld test rows\n", r->data,
           (long long)r->rows, (long long)r->features, (long long)c->classes,
           r->digits ? "pixels scaled by 1/16" : "features standardised (training rows' mean and sd)",
           (long long)r->train_rows, (long long)r->test_rows);
    printf("network Dense(%lld) -> %lld %s blocks (%s) -> Dense(%lld), %lld parameters; policy %s; %s%s\n",
           (long long)c->width, (long long)c->layers, mlp_block_name(c->block), remat_nn_activation_name(c->act),
           (long long)c->classes, (long long)r->parameters, r->policy,
           c->scanned ? "scanned over layers, schedule " : "unrolled", r->sched);
    printf("training %s lr %g%s, batch %lld, %lld epochs, seed %lld\n", r->optimizer, r->o.lr,
           r->o.optimizer == REMAT_NN_SGD ? (r->o.momentum > 0 ? " with momentum" : "") : "", (long long)r->o.batch,
           (long long)r->epochs, (long long)r->seed);
    if (r->o.shards > 0)
        printf("each batch in %lld micro-shards summed in shard order, over %d rank%s (%s)\n",
               (long long)r->o.shards, r->ranks, r->ranks == 1 ? "" : "s", r->dist_kind);
    if (r->chosen) {
        char what[160];
        mlp_budget_describe(&r->chosen->cfg, r->chosen->policy, what, sizeof what);
        printf("memory budget %lld bytes: chose %s, the fastest of %d fitting among %d candidates "
               "(predicted whole-step peak %zu bytes, step %.3f ms)\n",
               (long long)r->budget, what, r->chosen->fitting, r->chosen->candidates, r->chosen->peak,
               r->chosen->seconds * 1e3);
    }
    fflush(stdout);
}

void mlp_train_print_epoch(int64_t e, const mlp_epoch_row *h)
{
    printf("epoch %3lld  loss %.6f  train acc %.4f  test acc %.4f  %.2f s\n", (long long)e + 1, h->loss,
           h->train_acc, h->test_acc, h->seconds);
    fflush(stdout);
}

void mlp_train_print_summary(const mlp_train_report *r)
{
    double acc = r->final_acc;
    const remat_memory_plan *p = &r->plan;
    const remat_stats *f = &r->full;
    int m = r->have_full;
    printf("%s test accuracy %.4f (%lld of %lld)\n", r->epochs ? "final" : "initial (--epochs 0)", acc, (long long)llround(acc * (double)r->test_rows),
           (long long)r->test_rows);
    if (r->o.shards > 0)
        printf("memory plan of the training step (micro-shard of %lld rows, batch %lld): ", (long long)plan_rows(r),
               (long long)r->o.batch);
    else
        printf("memory plan of the training step (batch %lld): ", (long long)r->o.batch);
    printf("residuals %zu bytes, arena peak %zu predicted / %zu measured, scan snapshots %zu predicted / %zu "
           "measured, %lld ops recomputed per step\n",
           p->residual_bytes, p->arena_bytes, m ? f->peak_arena_bytes : 0, p->peak_snapshot_bytes,
           m ? f->peak_snapshot_bytes : 0, (long long)(m ? f->recomputed_ops : 0));
    if (p->offload_bytes) /* the second tier: the arena above is the RAM one */
        printf("offloaded residuals %zu bytes predicted / %zu measured in the slow tier (%s); RAM: arena peak "
               "%zu bytes\n",
               p->offload_bytes, m ? f->offload_bytes : 0, r->tier_dir, p->arena_bytes);
    if (r->chosen)
        printf("whole-step peak (arena with snapshots and tapes) %zu predicted / %zu measured, budget %lld bytes\n",
               p->arena_bytes, m ? f->peak_arena_bytes : 0, (long long)r->budget);
    if (!m)
        printf(r->epochs ? "(no full batch of %lld rows: nothing measured)\n" : "(--epochs 0: no step of %lld rows run, nothing measured)\n", (long long)r->o.batch);
}

void mlp_train_print_json(const mlp_train_report *r)
{
    const mlp_net_config *c = &r->cfg;
    printf("{\"config\": {\"data\": ");
    cli_json_string(stdout, r->data);
    printf(", \"features\": \"%s\", \"rows\": %lld, \"train_rows\": %lld, \"test_rows\": %lld, "
           "\"n_features\": %lld, \"classes\": %lld, \"layers\": %lld, \"width\": %lld, \"block\": \"%s\", "
           "\"activation\": \"%s\", \"policy\": \"%s\", \"scanned\": %s, \"schedule\": ",
           r->digits ? "scaled 1/16" : "standardised", (long long)r->rows, (long long)r->train_rows,
           (long long)r->test_rows, (long long)r->features, (long long)c->classes, (long long)c->layers,
           (long long)c->width, mlp_block_name(c->block), remat_nn_activation_name(c->act), r->policy,
           c->scanned ? "true" : "false");
    if (c->scanned)
        cli_json_string(stdout, r->sched);
    else
        printf("null");
    printf(", \"memory_budget\": %lld, \"optimizer\": \"%s\", \"lr\": %.17g, \"momentum\": %.17g, "
           "\"epochs\": %lld, \"batch\": %lld, \"shards\": %lld, \"seed\": %lld, \"test_fraction\": %.17g, "
           "\"parameters\": %lld},\n",
           (long long)r->budget, r->optimizer, r->o.lr, r->o.momentum, (long long)r->epochs, (long long)r->o.batch,
           (long long)r->o.shards, (long long)r->seed, r->test_fraction, (long long)r->parameters);
    printf(" \"ranks\": %d,\n", r->ranks);
    if (r->chosen)
        printf(" \"budget_choice\": {\"policy\": \"%s\", \"scanned\": %s, \"schedule\": \"%s\", "
               "\"peak_bytes_predicted\": %zu, \"step_seconds\": %.9g, \"fitting\": %d, \"candidates\": %d},\n",
               r->chosen->policy, c->scanned ? "true" : "false", c->scanned ? r->sched : "", r->chosen->peak,
               r->chosen->seconds, r->chosen->fitting, r->chosen->candidates);
    printf(" \"history\": [\n");
    for (int64_t e = 0; e < r->epochs; e++) {
        const mlp_epoch_row *h = &r->hist[e];
        printf("  {\"epoch\": %lld, \"loss\": %.17g, \"train_accuracy\": %.17g, \"test_accuracy\": %.17g, "
               "\"seconds\": %.6f}%s\n",
               (long long)e + 1, h->loss, h->train_acc, h->test_acc, h->seconds, e + 1 < r->epochs ? "," : "");
    }
    double acc = r->final_acc;
    printf(" ],\n \"test_accuracy\": %.17g, \"test_correct\": %lld,\n", acc,
           (long long)llround(acc * (double)r->test_rows));
    const remat_memory_plan *p = &r->plan;
    const remat_stats *f = &r->full;
    int m = r->have_full;
    printf(" \"plan\": {\"batch\": %lld, \"residual_bytes\": %zu, \"arena_bytes_predicted\": %zu, "
           "\"arena_bytes_measured\": %zu, \"snapshot_bytes_predicted\": %zu, \"snapshot_bytes_measured\": %zu, "
           "\"recomputed_ops\": %lld, \"recompute_instructions\": %lld, \"measured\": %s, \"rows\": %lld, "
           "\"offload_bytes_predicted\": %zu, \"offload_bytes_measured\": %zu}}\n",
           (long long)r->o.batch, p->residual_bytes, p->arena_bytes, m ? f->peak_arena_bytes : 0,
           p->peak_snapshot_bytes, m ? f->peak_snapshot_bytes : 0, (long long)(m ? f->recomputed_ops : 0),
           (long long)p->recompute_instructions, m ? "true" : "false", (long long)plan_rows(r), p->offload_bytes,
           m ? f->offload_bytes : 0);
    fflush(stdout);
}

static int is_csv(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && !strcasecmp(path + n - 4, ".csv");
}

int mlp_save_weights(const char *path, const remat_nn_params *p)
{
    cli_out o;
    if (!cli_out_open_for(&o, "--save-weights", path))
        return 0;
    if (!is_csv(path)) {
        if (remat_nn_params_save(p, o.f) != REMAT_OK)
            return cli_out_fail(&o, errno ? errno : EIO);
        return cli_out_commit(&o);
    }
    int ok = fprintf(o.f, "parameter,index,value\n") > 0;
    for (int i = 0; ok && i < remat_nn_params_count(p); i++) {
        remat_tensor t = remat_nn_params_tensor(p, i);
        const char *name = remat_nn_params_name(p, i);
        int64_t n = remat_shape_numel(&t.shape);
        int f32 = t.dtype == REMAT_F32;
        for (int64_t k = 0; ok && k < n; k++)
            ok = (f32 ? fprintf(o.f, "%s,%lld,%.9g\n", name, (long long)k, (double)((const float *)t.data)[k])
                      : fprintf(o.f, "%s,%lld,%.17g\n", name, (long long)k, ((const double *)t.data)[k])) > 0;
    }
    if (!ok)
        return cli_out_fail(&o, errno ? errno : EIO);
    return cli_out_commit(&o);
}
