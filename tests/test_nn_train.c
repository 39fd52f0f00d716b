/*
 * test_nn_train.c — the mini-batch trainer (remat/nn_train.h): it learns,
 * a seeded run repeats bit for bit, checkpointed and scanned networks
 * train to the same bits as the plain one, short last batches, prediction
 * in chunks, SGD, errors; micro-shards: one shard is the whole-batch step to
 * the bit, K shards repeat to the bit and follow it to rounding.
 */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

enum { N = 96, D = 6, C = 3, W = 8, L = 3 };

/* three Gaussian-ish clusters, labels one-hot */
static void make_data(float *x, float *y)
{
    for (int i = 0; i < N; i++) {
        int c = i % C;
        for (int j = 0; j < D; j++)
            x[i * D + j] = (float)(urand(-0.6, 0.6) + (j % C == c ? 1.5 : 0.0));
        for (int k = 0; k < C; k++)
            y[i * C + k] = k == c ? 1.0f : 0.0f;
    }
}

/* Dense(W) -> blocks -> Dense(C); blocks: L MLPBlocks, unrolled (policy or
 * not) or scanned with a schedule */
static remat_nn_module *network(const remat_policy *policy, const char *schedule)
{
    remat_nn_module *in = remat_nn_dense(W, true), *out = remat_nn_dense(C, true);
    remat_nn_module *mods[L + 2];
    int n = 0;
    mods[n++] = in;
    remat_nn_module *blk = remat_nn_mlp_block(W, REMAT_NN_TANH);
    remat_nn_module *body = policy ? remat_nn_remat(blk, policy) : remat_nn_module_ref(blk);
    if (schedule) {
        remat_scan_options o = {.schedule = spec_of(schedule)};
        mods[n++] = remat_nn_scan(body, L, &o);
    } else {
        for (int l = 0; l < L; l++)
            mods[n++] = remat_nn_module_ref(body);
    }
    mods[n++] = out;
    remat_nn_module *seq = remat_nn_sequential(n, mods);
    for (int i = 0; i < n; i++)
        remat_nn_module_free(mods[i]);
    remat_nn_module_free(blk);
    remat_nn_module_free(body);
    assert_non_null(seq);
    return seq;
}

typedef struct {
    remat_nn_module *m;
    remat_nn_params *p;
    remat_nn_trainer *t;
} run_t;

/* shards: remat_nn_train_options.shards (0: whole batches) */
static run_t start_sharded(const remat_policy *policy, const char *schedule, remat_nn_optimizer opt, int64_t batch,
                           int64_t shards)
{
    run_t r = {.m = network(policy, schedule)};
    assert_ok(remat_nn_init(r.m, remat_prng_key_from_seed(1), REMAT_F32, 2, DIMS(batch, D), &r.p));
    remat_nn_train_options o = {.loss = REMAT_NN_LOSS_SOFTMAX_CE, .optimizer = opt,
                                .lr = opt == REMAT_NN_ADAM ? 0.02 : 0.1, .momentum = 0.9, .batch = batch,
                                .shards = shards};
    assert_ok(remat_nn_trainer_new(r.m, r.p, D, C, &o, &r.t));
    return r;
}

static run_t start(const remat_policy *policy, const char *schedule, remat_nn_optimizer opt, int64_t batch)
{
    return start_sharded(policy, schedule, opt, batch, 0);
}

static void stop(run_t *r)
{
    remat_nn_trainer_free(r->t);
    remat_nn_params_free(r->p);
    remat_nn_module_free(r->m);
}

/* epochs over the data in order, batches of `batch` (the last may be short);
 * returns the last epoch's mean loss */
static double train(run_t *r, const float *x, const float *y, int epochs, int64_t batch)
{
    double total = 0;
    for (int e = 0; e < epochs; e++) {
        total = 0;
        for (int64_t at = 0; at < N; at += batch) {
            int64_t rows = N - at < batch ? N - at : batch;
            double loss;
            assert_ok(remat_nn_trainer_step(r->t, rows, x + at * D, y + at * C, &loss));
            total += loss * (double)rows;
        }
    }
    return total / N;
}

static double accuracy(run_t *r, const float *x, const float *y)
{
    float logits[N * C];
    assert_ok(remat_nn_trainer_predict(r->t, N, x, logits));
    int right = 0;
    for (int i = 0; i < N; i++) {
        int best = 0;
        for (int k = 1; k < C; k++)
            if (logits[i * C + k] > logits[i * C + best])
                best = k;
        right += y[i * C + best] == 1.0f;
    }
    return (double)right / N;
}

static void test_nn_train_learns(void **state)
{
    (void)state;
    float x[N * D], y[N * C];
    make_data(x, y);
    for (int o = 0; o < 2; o++) {
        run_t r = start(NULL, NULL, o ? REMAT_NN_SGD : REMAT_NN_ADAM, 20); /* 96 = 4 x 20 + 16 */
        double first = train(&r, x, y, 1, 20), last = train(&r, x, y, 30, 20);
        assert_true(last < 0.25 * first);
        assert_true(accuracy(&r, x, y) >= 0.95);
        remat_memory_plan plan;
        remat_nn_trainer_plan(r.t, &plan);
        assert_true(plan.arena_bytes > 0);
        stop(&r);
    }
}

/* dst's parameters := src's (the unrolled plain network). A scanned dst has
 * Dense_0 (2), the stacked block (2, layers first), Dense_1 (2); the
 * unrolled src has Dense_0, L blocks of 2, Dense_1. */
static void copy_params(run_t *dst, const run_t *src, bool scanned)
{
    for (int i = 0; i < remat_nn_params_count(dst->p); i++) {
        remat_tensor t = remat_nn_params_tensor(dst->p, i);
        bool stacked = scanned && (i == 2 || i == 3);
        int layers = stacked ? L : 1;
        size_t at = 0;
        for (int l = 0; l < layers; l++) {
            int j = !scanned || i < 2 ? i : stacked ? 2 + 2 * l + (i - 2) : i + 2 * (L - 1);
            remat_tensor s = remat_nn_params_tensor(src->p, j);
            size_t b = tbytes(s.dtype, &s.shape);
            memcpy((char *)t.data + at, s.data, b);
            at += b;
        }
        assert_int_equal(at, tbytes(t.dtype, &t.shape));
    }
}

/* every policy and schedule trains to the same parameters, bit for bit */
static void test_nn_train_bitwise_across_policies_and_schedules(void **state)
{
    (void)state;
    float x[N * D], y[N * C];
    make_data(x, y);
    static const struct {
        const remat_policy *const *policy;
        const char *schedule;
    } variants[] = {
        {NULL, NULL},
        {&remat_nothing_saveable, NULL},
        {&remat_dots_with_no_batch_dims_saveable, NULL},
        {NULL, "store-all"},
        {NULL, "per-step"},
        {NULL, "binomial:1"},
        {&remat_nothing_saveable, "binomial:2"},
    };
    run_t ref = {0}, init = {0}; /* init.p: the reference's starting values */
    for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
        run_t r = start(variants[v].policy ? *variants[v].policy : NULL, variants[v].schedule, REMAT_NN_ADAM, 32);
        if (v > 0) /* the reference's starting values */
            copy_params(&r, &init, variants[v].schedule != NULL);
        else
            assert_ok(remat_nn_params_copy(r.p, &init.p));
        train(&r, x, y, 3, 32);
        if (v == 0) {
            ref = r;
            continue;
        }
        float a[N * C], b[N * C];
        assert_ok(remat_nn_trainer_predict(ref.t, N, x, a));
        assert_ok(remat_nn_trainer_predict(r.t, N, x, b));
        if (memcmp(a, b, sizeof a) != 0) /* contract 3 */
            fail_msg("variant %zu (%s): trained network differs from the plain one", v,
                     variants[v].schedule ? variants[v].schedule : "unrolled");
        stop(&r);
    }
    stop(&ref);
    remat_nn_params_free(init.p);
}

/* The whole-step budget (remat_nn_train_options.memory_budget,
 * remat_nn_budget_choose): at several budgets, from the largest candidate's
 * peak down to the smallest, the chosen network's predicted peak fits, and a
 * trainer built with that budget measures a step's peak (arena with its
 * snapshots and tapes) within it; below the smallest peak no candidate fits
 * and the error names that peak; a trainer over its budget is
 * REMAT_ERR_BUDGET naming its own peak. */
static void test_nn_train_memory_budget(void **state)
{
    (void)state;
    float x[N * D], y[N * C];
    make_data(x, y);
    static const struct {
        const remat_policy *const *policy;
        const char *schedule;
    } cand[] = {
        {NULL, NULL}, {&remat_nothing_saveable, NULL}, {&remat_dots_with_no_batch_dims_saveable, NULL},
        {NULL, "store-all"}, {NULL, "per-step"}, {NULL, "binomial:1"}, {&remat_nothing_saveable, "binomial:1"},
    };
    enum { NC = sizeof cand / sizeof *cand };
    remat_nn_module *m[NC];
    remat_nn_params *p[NC];
    for (int i = 0; i < NC; i++) {
        m[i] = network(cand[i].policy ? *cand[i].policy : NULL, cand[i].schedule);
        assert_ok(remat_nn_init(m[i], remat_prng_key_from_seed(1), REMAT_F32, 2, DIMS(32, D), &p[i]));
    }
    remat_nn_train_options o = {.loss = REMAT_NN_LOSS_SOFTMAX_CE, .optimizer = REMAT_NN_ADAM, .lr = 0.02,
                                .batch = 32, .memory_budget = INT64_MAX};
    size_t peaks[NC];
    double secs[NC];
    remat_nn_budget_choice ch;
    assert_ok(remat_nn_budget_choose(NC, (const remat_nn_module *const *)m, p, D, C, &o, 1, peaks, secs, &ch));
    size_t lo = peaks[0], hi = peaks[0];
    for (int i = 0; i < NC; i++) {
        lo = peaks[i] < lo ? peaks[i] : lo, hi = peaks[i] > hi ? peaks[i] : hi;
        assert_true(secs[i] >= 0); /* everything fits an unbounded budget: every one timed */
    }
    assert_int_equal(ch.smallest_bytes, lo);
    assert_true(lo < hi); /* the candidates span a range: the budgets below choose among them */
    const size_t budgets[] = {hi, (lo + hi) / 2, lo + (hi - lo) / 4, lo};
    for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
        o.memory_budget = (int64_t)budgets[b];
        assert_ok(remat_nn_budget_choose(NC, (const remat_nn_module *const *)m, p, D, C, &o, 1, peaks, secs, &ch));
        assert_true(ch.index >= 0 && ch.index < NC);
        assert_true(ch.peak_bytes <= budgets[b]);
        for (int i = 0; i < NC; i++) /* timed exactly when it fits */
            assert_int_equal(secs[i] >= 0, peaks[i] <= budgets[b]);
        remat_nn_trainer *t;
        assert_ok(remat_nn_trainer_new(m[ch.index], p[ch.index], D, C, &o, &t));
        double loss;
        assert_ok(remat_nn_trainer_step(t, 32, x, y, &loss));
        const remat_stats *st = remat_nn_trainer_last_stats(t);
        if (st->peak_arena_bytes > budgets[b])
            fail_msg("budget %zu: candidate %d measured a peak of %zu bytes", budgets[b], ch.index,
                     st->peak_arena_bytes);
        assert_int_equal(st->peak_arena_bytes, ch.peak_bytes); /* predicted = measured */
        remat_nn_trainer_free(t);
    }
    /* below the smallest peak: none fits, the error names it */
    o.memory_budget = (int64_t)lo - 1;
    assert_int_equal(remat_nn_budget_choose(NC, (const remat_nn_module *const *)m, p, D, C, &o, 1, NULL, NULL, &ch),
                     REMAT_ERR_BUDGET);
    char want[64];
    snprintf(want, sizeof want, "smallest predicted peak is %zu bytes", lo);
    assert_contains(remat_last_error(), want);
    assert_int_equal(ch.index, -1);
    /* a trainer over its budget names its own peak */
    remat_nn_trainer *t = NULL;
    o.memory_budget = (int64_t)peaks[0] - 1;
    assert_int_equal(remat_nn_trainer_new(m[0], p[0], D, C, &o, &t), REMAT_ERR_BUDGET);
    snprintf(want, sizeof want, "predicted peak of %zu bytes", peaks[0]);
    assert_contains(remat_last_error(), want);
    assert_null(t);
    o.memory_budget = -1;
    assert_int_equal(remat_nn_trainer_new(m[0], p[0], D, C, &o, &t), REMAT_ERR_VALUE);
    o.memory_budget = 0;
    assert_int_equal(remat_nn_budget_choose(NC, (const remat_nn_module *const *)m, p, D, C, &o, 1, NULL, NULL, &ch),
                     REMAT_ERR_VALUE);
    for (int i = 0; i < NC; i++) {
        remat_nn_params_free(p[i]);
        remat_nn_module_free(m[i]);
    }
}

static void test_nn_train_repeats(void **state)
{
    (void)state;
    float x[N * D], y[N * C];
    make_data(x, y);
    run_t a = start(NULL, NULL, REMAT_NN_SGD, 20), b = start(NULL, NULL, REMAT_NN_SGD, 20);
    train(&a, x, y, 4, 20);
    train(&b, x, y, 4, 20);
    for (int i = 0; i < remat_nn_params_count(a.p); i++) {
        remat_tensor ta = remat_nn_params_tensor(a.p, i), tb = remat_nn_params_tensor(b.p, i);
        assert_memory_equal(ta.data, tb.data, tbytes(ta.dtype, &ta.shape)); /* contract 1 */
    }
    stop(&a);
    stop(&b);
}

static void test_nn_train_errors(void **state)
{
    (void)state;
    float x[N * D] = {0}, y[N * C] = {0};
    run_t r = start(NULL, NULL, REMAT_NN_ADAM, 8);
    assert_int_equal(remat_nn_trainer_step(r.t, 9, x, y, NULL), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "1 to 8");
    assert_int_equal(remat_nn_trainer_step(r.t, 0, x, y, NULL), REMAT_ERR_SHAPE);
    assert_int_equal(remat_nn_trainer_step(r.t, 4, NULL, y, NULL), REMAT_ERR_NULL);
    assert_int_equal(remat_nn_trainer_predict(r.t, 0, x, y), REMAT_ERR_SHAPE);
    /* a non-finite input: the loss is NaN, the parameters stay */
    float keep[W * D];
    memcpy(keep, remat_nn_params_tensor(r.p, 0).data, sizeof keep);
    x[0] = NAN;
    assert_int_equal(remat_nn_trainer_step(r.t, 8, x, y, NULL), REMAT_ERR_NUMERIC);
    assert_memory_equal(keep, remat_nn_params_tensor(r.p, 0).data, sizeof keep);
    remat_nn_trainer *t;
    remat_nn_train_options bad = {.lr = 0.1, .batch = 0};
    assert_int_equal(remat_nn_trainer_new(r.m, r.p, D, C, &bad, &t), REMAT_ERR_VALUE);
    bad = (remat_nn_train_options){.lr = -1, .batch = 4};
    assert_int_equal(remat_nn_trainer_new(r.m, r.p, D, C, &bad, &t), REMAT_ERR_VALUE);
    assert_null(t);
    bad = (remat_nn_train_options){.lr = 0.1, .batch = 4};
    assert_int_equal(remat_nn_trainer_new(r.m, r.p, D, C + 1, &bad, &t), REMAT_ERR_SHAPE);
    assert_contains(remat_last_error(), "targets have 4 columns");
    remat_nn_trainer_free(NULL);
    stop(&r);
}

/* o.compile reaches the trainer's compiles: interpreted loops without
 * fusion train to the same bits (exec.h: the same function and inputs give
 * the same bits under any options); an option out of range, or an unknown
 * backend, is remat_nn_trainer_new's error (it compiles the full batch). */
static void test_nn_train_compile_options(void **state)
{
    (void)state;
    float x[N * D], y[N * C];
    make_data(x, y);
    run_t a = start(NULL, NULL, REMAT_NN_SGD, 20), b = {.m = network(NULL, NULL)};
    assert_ok(remat_nn_init(b.m, remat_prng_key_from_seed(1), REMAT_F32, 2, DIMS(20, D), &b.p));
    remat_compile_options plain = {.jit = REMAT_JIT_NEVER, .no_fusion = true, .no_cache = true};
    remat_nn_train_options o = {.loss = REMAT_NN_LOSS_SOFTMAX_CE, .optimizer = REMAT_NN_SGD, .lr = 0.1,
                                .momentum = 0.9, .batch = 20, .compile = &plain};
    assert_ok(remat_nn_trainer_new(b.m, b.p, D, C, &o, &b.t));
    train(&a, x, y, 2, 20);
    train(&b, x, y, 2, 20);
    for (int i = 0; i < remat_nn_params_count(a.p); i++) {
        remat_tensor ta = remat_nn_params_tensor(a.p, i), tb = remat_nn_params_tensor(b.p, i);
        assert_memory_equal(ta.data, tb.data, tbytes(ta.dtype, &ta.shape));
    }
    remat_nn_trainer_free(b.t);
    b.t = NULL;
    remat_compile_options bad = {.num_threads = 999};
    o.compile = &bad;
    assert_int_equal(remat_nn_trainer_new(b.m, b.p, D, C, &o, &b.t), REMAT_ERR_VALUE);
    assert_null(b.t);
    assert_contains(remat_last_error(), "num_threads");
    bad = (remat_compile_options){.backend = "nope"};
    assert_int_equal(remat_nn_trainer_new(b.m, b.p, D, C, &o, &b.t), REMAT_ERR_ARG);
    assert_null(b.t);
    assert_contains(remat_last_error(), "backend 'nope'");
    stop(&a);
    stop(&b);
}

/* A loss that is not finite on the first step comes before any update: it
 * is said to be at initialisation, not blamed on the learning rate; after
 * an update the learning rate is a suspect and the count is given. */
static void test_nn_train_nan_at_initialisation_is_not_the_learning_rate(void **state)
{
    (void)state;
    float x[N * D], y[N * C];
    make_data(x, y);
    run_t r = start(NULL, NULL, REMAT_NN_ADAM, 8);
    float bad = x[0];
    x[0] = INFINITY;
    assert_int_equal(remat_nn_trainer_step(r.t, 8, x, y, NULL), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "at initialisation (the first forward pass, before any update)");
    assert_contains(remat_last_error(), "the learning rate is not the cause");
    x[0] = bad;
    assert_ok(remat_nn_trainer_step(r.t, 8, x, y, NULL));
    x[0] = INFINITY;
    assert_int_equal(remat_nn_trainer_step(r.t, 8, x, y, NULL), REMAT_ERR_NUMERIC);
    assert_contains(remat_last_error(), "after 1 update (lower the learning rate?)");
    stop(&r);
}

/* whether a and b hold the same parameter bits */
static bool same_params(const run_t *a, const run_t *b)
{
    for (int i = 0; i < remat_nn_params_count(a->p); i++) {
        remat_tensor ta = remat_nn_params_tensor(a->p, i), tb = remat_nn_params_tensor(b->p, i);
        if (memcmp(ta.data, tb.data, tbytes(ta.dtype, &ta.shape)) != 0)
            return false;
    }
    return true;
}

/* every parameter within rel of its tensor's largest |entry| (runs that
 * differ only in a sum's order) */
static bool near_params(const run_t *a, const run_t *b, double rel)
{
    for (int i = 0; i < remat_nn_params_count(a->p); i++) {
        remat_tensor ta = remat_nn_params_tensor(a->p, i), tb = remat_nn_params_tensor(b->p, i);
        assert_int_equal(ta.dtype, REMAT_F32);
        const float *fa = ta.data, *fb = tb.data;
        size_t n = tbytes(ta.dtype, &ta.shape) / sizeof(float);
        double scale = 0, worst = 0;
        for (size_t k = 0; k < n; k++) {
            scale = fmax(scale, fabs((double)fb[k]));
            worst = fmax(worst, fabs((double)fa[k] - (double)fb[k]));
        }
        if (!(worst <= rel * scale)) {
            printf("near_params: tensor %d: %.3g apart, its largest |entry| %.3g\n", i, worst, scale);
            return false;
        }
    }
    return true;
}

/* One micro-shard is the whole-batch step: same losses, same parameters, to
 * the bit (f32: rows x gradient is exact in double), short last batch included. */
static void test_nn_train_one_shard_is_the_whole_batch(void **state)
{
    (void)state;
    float x[N * D], y[N * C];
    make_data(x, y);
    for (int o = 0; o < 2; o++) {
        remat_nn_optimizer opt = o ? REMAT_NN_SGD : REMAT_NN_ADAM;
        run_t whole = start(NULL, NULL, opt, 20), one = start_sharded(NULL, NULL, opt, 20, 1);
        for (int e = 0; e < 3; e++) {
            double lw = train(&whole, x, y, 1, 20), l1 = train(&one, x, y, 1, 20);
            assert_memory_equal(&lw, &l1, sizeof lw); /* contract 4: K = 1 */
        }
        assert_true(same_params(&whole, &one)); /* contract 4 */
        stop(&whole);
        stop(&one);
    }
}

/* K shards: the same K repeats to the bit (docs/design-notes.md, "Bitwise
 * contracts": the same kernels in the same order); the losses and parameters
 * follow the whole-batch run's to rounding (the sum's order differs, nothing
 * else). Whether another K or the whole batch rounds differently in the last
 * bits is up to the kernels, so it is not asserted either way. batch 20 with
 * K = 8: shards of 2 and 3 rows; the last batch (16 rows) has shards of 2. */
static void test_nn_train_shards_repeat_and_follow(void **state)
{
    (void)state;
    float x[N * D], y[N * C];
    make_data(x, y);
    run_t whole = start(NULL, NULL, REMAT_NN_ADAM, 20), a = start_sharded(NULL, NULL, REMAT_NN_ADAM, 20, 8),
          b = start_sharded(NULL, NULL, REMAT_NN_ADAM, 20, 8), c = start_sharded(NULL, NULL, REMAT_NN_ADAM, 20, 5);
    for (int e = 0; e < 4; e++) {
        double lw = train(&whole, x, y, 1, 20), la = train(&a, x, y, 1, 20), lb = train(&b, x, y, 1, 20);
        train(&c, x, y, 1, 20);
        assert_memory_equal(&la, &lb, sizeof la); /* contract 1 */
        assert_true(fabs(la - lw) <= 1e-5 * fabs(lw));
    }
    assert_true(same_params(&a, &b)); /* contract 1 */
    assert_true(near_params(&a, &whole, 1e-5));
    assert_true(near_params(&a, &c, 1e-5));
    assert_true(accuracy(&a, x, y) >= 0.9);
    stop(&whole);
    stop(&a);
    stop(&b);
    stop(&c);
}

/* More shards than a short last batch has rows: the empty shards add
 * nothing. 3 rows in 8 shards are shards 2, 5 and 7 of one row each, the
 * same three one-row vectors in the same order as 3 rows in 3 shards. */
static void test_nn_train_shards_empty(void **state)
{
    (void)state;
    float x[N * D], y[N * C];
    make_data(x, y);
    run_t a = start_sharded(NULL, NULL, REMAT_NN_SGD, 8, 8), b = start_sharded(NULL, NULL, REMAT_NN_SGD, 8, 3);
    remat_nn_params *before;
    assert_ok(remat_nn_params_copy(a.p, &before));
    for (int i = 0; i < 3; i++) {
        double la, lb;
        assert_ok(remat_nn_trainer_step(a.t, 3, x + 3 * i * D, y + 3 * i * C, &la));
        assert_ok(remat_nn_trainer_step(b.t, 3, x + 3 * i * D, y + 3 * i * C, &lb));
        assert_memory_equal(&la, &lb, sizeof la); /* contract 4; an empty shard adds nothing */
        assert_true(isfinite(la));
    }
    assert_true(same_params(&a, &b)); /* contract 4 */
    assert_memory_not_equal(remat_nn_params_tensor(before, 0).data, remat_nn_params_tensor(a.p, 0).data,
                            sizeof(float) * W * D);
    remat_nn_params_free(before);
    stop(&a);
    stop(&b);
}

static void test_nn_train_shards_errors(void **state)
{
    (void)state;
    run_t r = start(NULL, NULL, REMAT_NN_ADAM, 8);
    remat_nn_trainer *t;
    remat_nn_train_options bad = {.lr = 0.1, .batch = 8, .shards = 9};
    assert_int_equal(remat_nn_trainer_new(r.m, r.p, D, C, &bad, &t), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "shards 9");
    assert_null(t);
    bad.shards = -1;
    assert_int_equal(remat_nn_trainer_new(r.m, r.p, D, C, &bad, &t), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "shards -1");
    /* a NaN in one shard fails the step and leaves the parameters as they were */
    run_t s = start_sharded(NULL, NULL, REMAT_NN_ADAM, 8, 4);
    float x[N * D] = {0}, y[N * C] = {0}, keep[W * D];
    memcpy(keep, remat_nn_params_tensor(s.p, 0).data, sizeof keep);
    x[6 * D] = NAN; /* row 6: shard 3 */
    assert_int_equal(remat_nn_trainer_step(s.t, 8, x, y, NULL), REMAT_ERR_NUMERIC);
    assert_memory_equal(keep, remat_nn_params_tensor(s.p, 0).data, sizeof keep);
    stop(&s);
    stop(&r);
}

int main(void)
{
    rng_seed(0x747261696e6e6e31ull);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nn_train_learns),
        cmocka_unit_test(test_nn_train_bitwise_across_policies_and_schedules),
        cmocka_unit_test(test_nn_train_repeats),
        cmocka_unit_test(test_nn_train_memory_budget),
        cmocka_unit_test(test_nn_train_compile_options),
        cmocka_unit_test(test_nn_train_errors),
        cmocka_unit_test(test_nn_train_nan_at_initialisation_is_not_the_learning_rate),
        cmocka_unit_test(test_nn_train_one_shard_is_the_whole_batch),
        cmocka_unit_test(test_nn_train_shards_repeat_and_follow),
        cmocka_unit_test(test_nn_train_shards_empty),
        cmocka_unit_test(test_nn_train_shards_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
