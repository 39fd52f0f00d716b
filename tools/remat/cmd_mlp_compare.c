/* cmd_mlp_compare.c — `remat mlp compare`: one gradient of the deep network under each checkpoint policy
 * (unrolled blocks) and each schedule (blocks scanned over stacked parameters), side by side. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mlp_cli.h"
#include "pfr_cli.h"

#define MAX_VARIANTS 32
#define IN_FEATURES 64
#define CLASSES 10
#define DEFAULT_POLICIES "none,nothing_saveable,dots_with_no_batch_dims_saveable"
#define DEFAULT_SCHEDULES "store-all,per-step,binomial:4"

static void help(FILE *out)
{
    fprintf(out,
            "usage: remat mlp compare [--layers L] [--width W] [--batch B] [--block mlp|ffn]\n"
            "                         [--activation A] [--policies LIST] [--schedules LIST]\n"
            "                         [--repeat R] [--seed S] [--memory-budget B] [--json] [--plot FILE]\n"
            "                         [--disk-dir DIR]\n"
            "\n"
            "Takes one gradient (value_and_grad of the mean softmax cross-entropy, %d classes)\n"
            "of Dense(W) -> L blocks -> Dense(%d) on a seeded random batch of B rows of %d\n"
            "features, once per checkpoint policy with the blocks unrolled (each block in\n"
            "nn.remat) and once per schedule with the blocks scanned over stacked parameters;\n"
            "every variant starts from the same weights. Prints for each: residual bytes,\n"
            "arena peak (predicted / measured), scan snapshot peak (predicted / measured),\n"
            "forward ops recomputed, scan body evaluations, median time, and max |gradient - the unrolled gradient\n"
            "without checkpointing|, which must be 0: the command fails otherwise. Residual bytes\n"
            "are the activations the backward keeps (scan stores included), the weights aside\n"
            "(their bytes are said once). Progress goes to stderr: one line per variant, or a\n"
            "live line on a terminal.\n"
            "\n"
            "%s"
            "                     (defaults: --layers 16 --width 256 --block mlp)\n"
            "  --batch B          rows of the random batch (default 64)\n"
            "  --policies LIST    comma-separated, unrolled: none, nothing_saveable,\n"
            "                     everything_saveable, dots_saveable, dots_with_no_batch_dims_saveable\n"
            "                     (JAX's aliases checkpoint_dots, checkpoint_dots_with_no_batch_dims too),\n"
            "                     or with arguments, the offload policies among them:\n"
            "                     'offload_dot_with_no_batch_dims(device, pinned_host)'\n"
            "                     (commas inside parentheses or brackets do not split)\n"
            "                     (default " DEFAULT_POLICIES ")\n"
            "  --schedules LIST   comma-separated, scanned: store-all, per-step, periodic:K,\n"
            "                     two-level[:K], binomial:S, online:S (default " DEFAULT_SCHEDULES ")\n"
            "                     an empty list ('') runs none of that kind\n"
            "  --repeat R         runs per variant; the median time is shown (default 5)\n"
            "  --seed S           weights (Flax PRNGKey(S)) and batch (default 0)\n"
            "  --memory-budget B  also name the fastest variant whose whole-step peak (arena with\n"
            "                     snapshots and tapes, predicted) fits in B bytes; none fitting\n"
            "                     is an error naming the smallest peak\n"
            "  --disk-dir DIR     the directory of offloaded residuals' files (default $TMPDIR, else\n"
            "                     /tmp); each variant's offloaded bytes are printed after the table\n"
            "  --json             print one JSON document (a list of objects) instead of a table\n"
            "  --plot FILE        draw the memory / time frontier, one point per variant\n"
            "                     (.png, .svg, .pdf, .ps)\n",
            CLASSES, CLASSES, IN_FEATURES, mlp_net_options_help);
}

typedef struct {
    char label[192], name[160];
    int scanned, has_policy;
    const remat_policy *policy;
    remat_schedule_spec spec;
    remat_memory_plan plan;
    remat_stats st;
    double seconds, loss, max_diff;
    float *grad; /* in the scanned network's parameter layout */
} variant;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* strtok_r on ',' outside parentheses and brackets: a policy with
 * arguments ('offload_dot_with_no_batch_dims(device, pinned_host)') is one
 * item; empty items are skipped, as strtok's */
static char *next_item(char *text, char **save)
{
    char *p = text ? text : *save;
    while (p && *p == ',')
        p++;
    if (!p || !*p)
        return NULL;
    char *start = p;
    int depth = 0;
    for (; *p && (depth > 0 || *p != ','); p++)
        depth += (*p == '(' || *p == '[') - (*p == ')' || *p == ']');
    *save = *p ? p + 1 : p;
    *p = 0;
    return start;
}

static int parse_lists(const char *policies, const char *schedules, variant *v, int *n)
{
    const char *lists[2] = {policies, schedules};
    for (int kind = 0; kind < 2; kind++) {
        char *copy = strdup(lists[kind]), *save = NULL;
        if (!copy) {
            fprintf(stderr, "remat: mlp compare: out of memory\n");
            return 0;
        }
        int ok = 1;
        (void)save;
        for (char *tok = next_item(copy, &save); tok && ok; tok = next_item(NULL, &save)) {
            if (*n >= MAX_VARIANTS) {
                fprintf(stderr, "remat: %s: more than %d variants in all\n", kind ? "--schedules" : "--policies",
                        MAX_VARIANTS);
                ok = 0;
                break;
            }
            variant *r = &v[*n];
            memset(r, 0, sizeof *r);
            r->scanned = kind;
            if (!kind) {
                ok = mlp_parse_policy("--policies", tok, &r->policy, &r->has_policy);
                if (ok)
                    snprintf(r->name, sizeof r->name, "%s", tok);
            } else if (remat_schedule_parse(tok, &r->spec) != REMAT_OK) {
                fprintf(stderr, "remat: --schedules: %s\n", remat_last_error());
                ok = 0;
            } else
                remat_schedule_format(&r->spec, r->name, sizeof r->name);
            snprintf(r->label, sizeof r->label, "%s %s", kind ? "scan" : "unrolled", r->name);
            (*n) += ok;
        }
        free(copy);
        if (!ok)
            return 0;
    }
    if (*n == 0) {
        fprintf(stderr, "remat: --policies, --schedules: both lists are empty\n");
        return 0;
    }
    return 1;
}

typedef struct {
    mlp_net_config base;
    const remat_nn_params *ref; /* the scanned network's parameters: the weights of every variant */
    int64_t batch;
    const float *x, *y;
    int repeat;
    const remat_compile_options *copts; /* the environment's, with --disk-dir */
} setup;

/* Builds the variant's network from the reference weights, compiles its
 * value_and_grad and runs it `repeat` times. */
static int run_variant(const setup *s, variant *v)
{
    mlp_net_config c = s->base;
    c.scanned = v->scanned, c.schedule = v->spec, c.policy = v->policy, c.has_policy = v->has_policy;
    remat_nn_module *net = mlp_net_new(&c);
    remat_nn_params *p = NULL;
    mlp_param_map *map = NULL;
    remat_fn *f = NULL, *vg = NULL;
    remat_program *prog = NULL;
    remat_tensor *in = NULL, *out = NULL;
    double *times = NULL;
    float **grads = NULL;
    int ok = 0;
    int64_t d = IN_FEATURES;
    if (!net)
        return 0;
    if (remat_nn_init(net, remat_prng_key_from_seed(0), REMAT_F32, 1, &d, &p) != REMAT_OK) {
        fprintf(stderr, "remat: mlp compare: %s: %s\n", v->label, remat_last_error());
        goto out;
    }
    if (!mlp_param_map_new(p, s->ref, &map))
        goto out;
    mlp_params_copy_mapped(p, s->ref, map);
    int np = remat_nn_params_count(p);
    int *argnums = malloc(sizeof *argnums * (size_t)np);
    if (argnums)
        for (int i = 0; i < np; i++)
            argnums[i] = i;
    remat_status st = argnums ? remat_nn_loss_fn(net, p, REMAT_NN_LOSS_SOFTMAX_CE, s->batch, d, CLASSES, &f)
                              : REMAT_ERR_NOMEM;
    if (st == REMAT_OK)
        st = remat_value_and_grad(f, np, argnums, &vg);
    remat_backend *be = NULL;
    if (st == REMAT_OK)
        st = remat_backend_from_env(&be);
    if (st == REMAT_OK)
        st = remat_compile_opts(vg, be, s->copts, &prog);
    free(argnums);
    if (st != REMAT_OK) {
        fprintf(stderr, "remat: mlp compare: %s: %s\n", v->label, remat_last_error());
        goto out;
    }
    in = calloc((size_t)np + 2, sizeof *in);
    out = calloc((size_t)np + 1, sizeof *out);
    grads = calloc((size_t)np, sizeof *grads);
    times = malloc(sizeof *times * (size_t)s->repeat);
    float loss = 0;
    if (!in || !out || !grads || !times) {
        fprintf(stderr, "remat: mlp compare: out of memory\n");
        goto out;
    }
    for (int i = 0; i < np; i++)
        in[i] = remat_nn_params_tensor(p, i);
    in[np] = remat_tensor_f32((float *)s->x, 2, (int64_t[]){s->batch, d});
    in[np + 1] = remat_tensor_f32((float *)s->y, 2, (int64_t[]){s->batch, CLASSES});
    out[0] = remat_tensor_f32(&loss, 0, NULL);
    for (int i = 0; i < np; i++) {
        out[i + 1] = remat_nn_params_tensor(p, i);
        grads[i] = malloc(remat_tensor_bytes(&out[i + 1]));
        if (!grads[i]) {
            fprintf(stderr, "remat: mlp compare: out of memory\n");
            goto out;
        }
        out[i + 1].data = grads[i];
    }
    for (int k = 0; k < s->repeat; k++) {
        if (remat_run(prog, np + 2, in, np + 1, out, &v->st) != REMAT_OK) {
            fprintf(stderr, "remat: mlp compare: %s: %s\n", v->label, remat_last_error());
            goto out;
        }
        times[k] = v->st.seconds;
    }
    qsort(times, (size_t)s->repeat, sizeof *times, cmp_double);
    v->seconds = times[s->repeat / 2];
    v->loss = loss;
    remat_program_plan(prog, &v->plan);
    /* the gradient in the reference (scanned) layout */
    int nr = remat_nn_params_count(s->ref);
    size_t *off = malloc(sizeof *off * (size_t)nr);
    v->grad = calloc((size_t)remat_nn_params_numel(s->ref) + 1, sizeof *v->grad);
    if (!off || !v->grad) {
        free(off);
        fprintf(stderr, "remat: mlp compare: out of memory\n");
        goto out;
    }
    size_t total = 0;
    for (int j = 0; j < nr; j++) {
        remat_tensor t = remat_nn_params_tensor(s->ref, j);
        off[j] = total;
        total += (size_t)remat_shape_numel(&t.shape);
    }
    for (int i = 0; i < np; i++) {
        remat_tensor t = remat_nn_params_tensor(p, i);
        size_t n = (size_t)remat_shape_numel(&t.shape);
        memcpy(v->grad + off[map[i].src] + (map[i].layer >= 0 ? (size_t)map[i].layer * n : 0), grads[i],
               n * sizeof(float));
    }
    free(off);
    ok = 1;
out:
    for (int i = 0; grads && i < remat_nn_params_count(p); i++)
        free(grads[i]);
    free(grads);
    free(times);
    free(in);
    free(out);
    free(map);
    remat_program_free(prog);
    remat_fn_free(vg);
    remat_fn_free(f);
    remat_nn_params_free(p);
    remat_nn_module_free(net);
    return ok;
}

/* residual bytes without the arguments (weights, batch): the activations the backward keeps */
static size_t activations(const variant *r) { return r->plan.residual_bytes - r->plan.residual_arg_bytes; }

static void print_table(const setup *s, const variant *v, int n, int64_t seed, size_t weights)
{
    printf("network Dense(%lld) -> %lld %s blocks (%s) -> Dense(%d), %lld-row random batch of %d features, "
           "seed %lld\n",
           (long long)s->base.width, (long long)s->base.layers, mlp_block_name(s->base.block),
           remat_nn_activation_name(s->base.act), CLASSES, (long long)s->batch, IN_FEATURES, (long long)seed);
    printf("weights %zu bytes (not in the residual bytes below)\n", weights);
    /* every cell as text first, so each column is as wide as its widest
     * cell (a policy such as offload_dot_with_no_batch_dims(device,
     * pinned_host) is longer than any fixed width) */
    enum { COLS = 8 };
    static const char *const head[COLS] = {"variant",  "residual bytes", "arena peak pred/meas", "snapshot peak pred/meas",
                                           "recomputed", "scan evals",  "time ms",              "max|dgrad|"};
    char(*cell)[COLS][64] = calloc((size_t)n + 1, sizeof *cell);
    if (!cell) {
        fprintf(stderr, "remat: mlp compare: out of memory\n");
        return;
    }
    int w[COLS];
    for (int c = 0; c < COLS; c++)
        w[c] = (int)strlen(head[c]);
    int wlabel = w[0];
    for (int i = 0; i < n; i++) {
        const variant *r = &v[i];
        snprintf(cell[i][1], 64, "%zu", activations(r));
        snprintf(cell[i][2], 64, "%zu/%zu", r->plan.arena_bytes, r->st.peak_arena_bytes);
        snprintf(cell[i][3], 64, "%zu/%zu", r->plan.peak_snapshot_bytes, r->st.peak_snapshot_bytes);
        snprintf(cell[i][4], 64, "%lld", (long long)r->st.recomputed_ops);
        snprintf(cell[i][5], 64, "%lld", (long long)r->st.forward_evals);
        snprintf(cell[i][6], 64, "%.3f", r->seconds * 1e3);
        snprintf(cell[i][7], 64, "%.3g", r->max_diff);
        if ((int)strlen(r->label) > wlabel)
            wlabel = (int)strlen(r->label);
        for (int c = 1; c < COLS; c++)
            if ((int)strlen(cell[i][c]) > w[c])
                w[c] = (int)strlen(cell[i][c]);
    }
    printf("%-*s", wlabel, head[0]);
    for (int c = 1; c < COLS; c++)
        printf("  %*s", w[c], head[c]);
    printf("\n");
    for (int i = 0; i < n; i++) {
        printf("%-*s", wlabel, v[i].label);
        for (int c = 1; c < COLS; c++)
            printf("  %*s", w[c], cell[i][c]);
        printf("\n");
    }
    free(cell);
    for (int i = 0; i < n; i++) /* the second tier: the arena above is the RAM one */
        if (v[i].plan.offload_bytes)
            printf("%s: offloaded residuals %zu bytes predicted / %zu measured in the slow tier (%s)\n", v[i].label,
                   v[i].plan.offload_bytes, v[i].st.offload_bytes, s->copts->tier_dir ? s->copts->tier_dir : "/tmp");
}

static void print_json(const setup *s, const variant *v, int n, int64_t seed, size_t weights, int chosen)
{
    printf("[\n");
    for (int i = 0; i < n; i++) {
        const variant *r = &v[i];
        printf("  {\"variant\": ");
        cli_json_string(stdout, r->label);
        printf(", \"scanned\": %s, \"policy\": ", r->scanned ? "true" : "false");
        if (r->scanned)
            printf("null, \"schedule\": ");
        cli_json_string(stdout, r->name);
        if (!r->scanned)
            printf(", \"schedule\": null");
        printf(", \"layers\": %lld, \"width\": %lld, \"batch\": %lld, \"block\": \"%s\", \"activation\": \"%s\", "
               "\"seed\": %lld, \"residual_bytes\": %zu, \"weight_bytes\": %zu, \"budget_choice\": %s, "
               "\"arena_bytes_predicted\": %zu, \"arena_bytes_measured\": %zu, "
               "\"snapshot_bytes_predicted\": %zu, \"snapshot_bytes_measured\": %zu, \"recomputed_ops\": %lld, "
               "\"recompute_instructions\": %lld, \"scan_body_evals\": %lld, \"seconds\": %.9g, \"loss\": %.9g, "
               "\"offload_bytes_predicted\": %zu, \"offload_bytes_measured\": %zu, \"max_abs_grad_diff\": %.9g}%s\n",
               (long long)s->base.layers, (long long)s->base.width, (long long)s->batch, mlp_block_name(s->base.block),
               remat_nn_activation_name(s->base.act), (long long)seed, activations(r), weights,
               i == chosen ? "true" : "false", r->plan.arena_bytes,
               r->st.peak_arena_bytes, r->plan.peak_snapshot_bytes, r->st.peak_snapshot_bytes,
               (long long)r->st.recomputed_ops, (long long)r->plan.recompute_instructions, (long long)r->st.forward_evals, r->seconds, r->loss,
               r->plan.offload_bytes, r->st.offload_bytes, r->max_diff, i + 1 < n ? "," : "");
    }
    printf("]\n");
}

static int plot(const char *path, const setup *s, const variant *v, int n)
{
    cli_series ser[MAX_VARIANTS];
    double x[MAX_VARIANTS], y[MAX_VARIANTS];
    for (int i = 0; i < n; i++) {
        x[i] = (double)(v[i].st.peak_arena_bytes > 0 ? v[i].st.peak_arena_bytes : 1);
        y[i] = v[i].seconds > 0 ? v[i].seconds * 1e3 : 1e-6;
        ser[i] = (cli_series){.label = v[i].label, .n = 1, .x = &x[i], .y = &y[i], .points_only = 1,
                              .color = v[i].scanned ? 2 : 1};
    }
    char title[160];
    snprintf(title, sizeof title, "%lld %s blocks of width %lld, batch %lld: memory vs time",
             (long long)s->base.layers, mlp_block_name(s->base.block), (long long)s->base.width, (long long)s->batch);
    return cli_plot(path, title, "peak arena bytes, measured (log10)", "median time per gradient, ms", 1, 0, n, ser);
}

int cmd_mlp_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"layers", required_argument, 0, 'L'}, {"width", required_argument, 0, 'W'},
        {"batch", required_argument, 0, 'B'}, {"block", required_argument, 0, 'k'},
        {"activation", required_argument, 0, 'a'}, {"policies", required_argument, 0, 'P'},
        {"schedules", required_argument, 0, 's'}, {"repeat", required_argument, 0, 'r'},
        {"seed", required_argument, 0, 'S'}, {"json", no_argument, 0, 'j'},
        {"plot", required_argument, 0, 'o'}, {"memory-budget", required_argument, 0, 'b'},
        {"disk-dir", required_argument, 0, 'D'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    setup s = {.base = {.layers = 16, .width = 256, .block = MLP_BLOCK_MLP, .classes = CLASSES}, .batch = 64,
               .repeat = 5};
    const char *policies = DEFAULT_POLICIES, *schedules = DEFAULT_SCHEDULES, *act_text = NULL, *plot_path = NULL;
    const char *disk_dir = NULL;
    int64_t seed = 0, repeat = 5, budget = -1;
    int json = 0, c;
    optind = 1;
    opterr = 0;
    if (!cli_options_once(argc, argv, opts, NULL))
        return 2;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'L': if (!cli_int64("--layers", optarg, 1, 10000, &s.base.layers)) return 2; break;
        case 'W': if (!cli_int64("--width", optarg, 1, 1 << 16, &s.base.width)) return 2; break;
        case 'B': if (!cli_int64("--batch", optarg, 1, 1 << 20, &s.batch)) return 2; break;
        case 'k': if (!mlp_parse_block(optarg, &s.base.block)) return 2; break;
        case 'a': act_text = optarg; break;
        case 'P': policies = optarg; break;
        case 's': schedules = optarg; break;
        case 'r': if (!cli_int64("--repeat", optarg, 1, 1000, &repeat)) return 2; break;
        case 'S': if (!cli_int64("--seed", optarg, 0, INT64_MAX, &seed)) return 2; break;
        case 'j': json = 1; break;
        case 'o': plot_path = optarg; break;
        case 'b': if (!cli_bytes("--memory-budget", optarg, &budget)) return 2; break;
        case 'D': disk_dir = optarg; break;
        case 'h': help(stdout); return 0;
        default: return pfr_cli_bad_option("mlp compare", c, argv);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "remat: mlp compare: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    s.repeat = (int)repeat;
    if (disk_dir && !*disk_dir) {
        fprintf(stderr, "remat: --disk-dir: the directory is empty\n");
        return 2;
    }
    remat_compile_options copts;
    if (remat_compile_options_from_env(&copts) != REMAT_OK) {
        fprintf(stderr, "remat: mlp compare: %s\n", remat_last_error());
        return 2;
    }
    if (disk_dir)
        copts.tier_dir = disk_dir;
    s.copts = &copts;
    s.base.act = s.base.block == MLP_BLOCK_FFN ? REMAT_NN_GELU : REMAT_NN_RELU;
    if (act_text && !mlp_parse_activation("--activation", act_text, &s.base.act))
        return 2;
    variant *v = calloc(MAX_VARIANTS + 1, sizeof *v);
    if (!v) {
        fprintf(stderr, "remat: mlp compare: out of memory\n");
        return 1;
    }
    /* v[0]: the reference, unrolled without checkpointing; shown only if listed */
    snprintf(v[0].label, sizeof v[0].label, "unrolled none");
    int n = 0, status = 2;
    remat_nn_module *ref_net = NULL;
    remat_nn_params *ref = NULL;
    float *x = NULL, *y = NULL;
    if (!parse_lists(policies, schedules, v + 1, &n) || (plot_path && !cli_plot_check(plot_path)))
        goto out;
    status = 1;
    /* the weights: the scanned network's, from the seed */
    mlp_net_config rc = s.base;
    rc.scanned = 1;
    int64_t d = IN_FEATURES;
    if (!(ref_net = mlp_net_new(&rc)))
        goto out;
    if (remat_nn_init(ref_net, remat_prng_key_from_seed((uint64_t)seed), REMAT_F32, 1, &d, &ref) != REMAT_OK) {
        fprintf(stderr, "remat: mlp compare: %s\n", remat_last_error());
        goto out;
    }
    x = malloc(sizeof *x * (size_t)(s.batch * d));
    y = calloc((size_t)(s.batch * CLASSES), sizeof *y);
    if (!x || !y) {
        fprintf(stderr, "remat: mlp compare: out of memory\n");
        goto out;
    }
    uint64_t state = (uint64_t)seed ^ 0x6d6c702d62617463ull; /* "mlp-batc" */
    for (int64_t i = 0; i < s.batch * d; i++)
        x[i] = (float)((double)(remat_splitmix64_next(&state) >> 11) * 0x1p-52 - 1.0); /* [-1, 1) */
    for (int64_t r = 0; r < s.batch; r++)
        y[r * CLASSES + (int64_t)remat_splitmix64_below(&state, CLASSES)] = 1.0f;
    s.ref = ref, s.x = x, s.y = y;
    int tty = isatty(STDERR_FILENO);
    for (int i = 0; i <= n; i++) {
        if (!run_variant(&s, &v[i])) {
            if (tty)
                fputc('\n', stderr);
            goto out;
        }
        /* progress: v[0] is the reference, run first */
        fprintf(stderr, "%sremat: mlp compare: %d/%d %s: %.3f ms, arena peak %zu bytes%s", tty ? "\r\033[K" : "",
                i + 1, n + 1, i ? v[i].label : "reference (unrolled none)", v[i].seconds * 1e3,
                v[i].st.peak_arena_bytes, tty ? (i == n ? "\n" : "") : "\n");
        fflush(stderr);
    }
    int64_t total = remat_nn_params_numel(ref);
    int differ = 0;
    for (int i = 1; i <= n; i++) {
        v[i].max_diff = 0;
        for (int64_t k = 0; k < total; k++)
            v[i].max_diff = fmax(v[i].max_diff, fabs((double)v[i].grad[k] - (double)v[0].grad[k]));
        v[i].max_diff = fmax(v[i].max_diff, fabs(v[i].loss - v[0].loss));
        differ |= v[i].max_diff != 0;
    }
    int chosen = -1, smallest = -1;
    for (int i = 1; budget >= 0 && i <= n; i++) {
        if (smallest < 0 || v[i].plan.arena_bytes < v[smallest].plan.arena_bytes)
            smallest = i;
        if (v[i].plan.arena_bytes <= (size_t)budget && (chosen < 0 || v[i].seconds < v[chosen].seconds))
            chosen = i;
    }
    size_t weights = remat_nn_params_bytes(ref);
    if (json)
        print_json(&s, v + 1, n, seed, weights, chosen - 1);
    else
        print_table(&s, v + 1, n, seed, weights);
    status = 0;
    if (budget >= 0 && chosen > 0 && !json)
        printf("memory budget %lld bytes: chose %s, the fastest fitting (whole-step peak %zu predicted / %zu "
               "measured, %.3f ms)\n", (long long)budget, v[chosen].label, v[chosen].plan.arena_bytes,
               v[chosen].st.peak_arena_bytes, v[chosen].seconds * 1e3);
    fflush(stdout);
    if (budget >= 0 && chosen < 0) {
        fprintf(stderr, "remat: --memory-budget: %lld bytes is too small for every listed variant: the smallest "
                        "predicted peak is %zu bytes (%s); give at least %zu\n", (long long)budget,
                v[smallest].plan.arena_bytes, v[smallest].label, v[smallest].plan.arena_bytes);
        status = 1;
    }
    for (int i = 1; i <= n; i++)
        if (v[i].max_diff != 0) {
            fprintf(stderr, "remat: mlp compare: %s: the gradient differs from the unrolled one without "
                            "checkpointing by up to %.3g\n", v[i].label, v[i].max_diff);
            status = 1;
        }
    if ((plot_path && !differ && !plot(plot_path, &s, v + 1, n)) || !cli_outputs_finish())
        status = 1;
out:
    for (int i = 0; i <= MAX_VARIANTS; i++)
        free(v[i].grad);
    free(v);
    free(x);
    free(y);
    remat_nn_params_free(ref);
    remat_nn_module_free(ref_net);
    return status;
}
