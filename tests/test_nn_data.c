/*
 * test_nn_data.c — labelled tables (remat/nn_data.h): the shipped digits
 * file ($REMAT_DATA/digits/digits.csv), the loader's error catalogue (status
 * plus a message starting path:line:column), scaling, the splitmix64 stream
 * and shuffle against values computed independently (Vigna's reference
 * outputs; a Python transcription of the documented algorithm), the split and
 * the batcher: reproducible from their seeds, every row once per epoch.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remat/nn_data.h"

/* ---- helpers ---- */

static remat_labeled *load_text_(const char *csv, size_t n, const remat_labeled_options *opt, const char *file,
                                 int line)
{
    char path[256];
    write_temp(path, sizeof path, "remat_nn_data_", csv, n);
    remat_labeled *t = NULL;
    if (remat_labeled_load(path, opt, &t) != REMAT_OK)
        fail_msg("%s:%d: load failed: %s\n--- csv ---\n%s", file, line, remat_last_error(), csv);
    unlink(path);
    return t;
}
#define load_text(csv, opt) load_text_((csv), strlen(csv), (opt), __FILE__, __LINE__)

/* The load fails with a parse error whose message starts "<path>:<line>:<col>: "
 * and contains `what`; *out is left NULL. */
static void expect_error_(const void *bytes, size_t n, const remat_labeled_options *opt, int line, int col,
                          const char *what, const char *file, int src_line)
{
    char path[256], where[300];
    write_temp(path, sizeof path, "remat_nn_data_", bytes, n);
    snprintf(where, sizeof where, "%s:%d:%d: ", path, line, col);
    remat_labeled *t = (remat_labeled *)&t;
    remat_status st = remat_labeled_load(path, opt, &t);
    const char *msg = remat_last_error();
    if (st != REMAT_ERR_PARSE || strncmp(msg, where, strlen(where)) != 0 || !strstr(msg, what))
        fail_msg("%s:%d: got %s \"%s\"\n  want parse error \"%s...%s...\"", file, src_line, remat_status_name(st),
                 msg, where, what);
    assert_null(t);
    unlink(path);
}
#define expect_error(csv, line, col, what) \
    expect_error_((csv), strlen(csv), NULL, (line), (col), (what), __FILE__, __LINE__)
#define expect_error_opt(csv, opt, line, col, what) \
    expect_error_((csv), strlen(csv), (opt), (line), (col), (what), __FILE__, __LINE__)

static remat_labeled *digits(void)
{
    const char *dir = getenv("REMAT_DATA");
    if (!dir)
        fail_msg("REMAT_DATA is not set (tests/meson.build sets it to the source tree's data/)");
    char path[1024];
    snprintf(path, sizeof path, "%s/digits/digits.csv", dir);
    remat_labeled *t = NULL;
    assert_ok(remat_labeled_load(path, NULL, &t));
    return t;
}

/* n rows, 2 features (r, -r), label r % 3 */
static remat_labeled *counting_table(int n)
{
    size_t cap = 32 + (size_t)n * 32, o = 0;
    char *csv = xmalloc(cap);
    o += (size_t)snprintf(csv, cap, "a,b,label\n");
    for (int r = 0; r < n; r++)
        o += (size_t)snprintf(csv + o, cap - o, "%d,%d,%d\n", r, -r, r % 3);
    remat_labeled *t = load_text(csv, NULL);
    free(csv);
    return t;
}

/* ---- the digits ---- */

static void test_nn_data_digits_shape_and_first_row(void **state)
{
    (void)state;
    remat_labeled *t = digits();
    assert_int_equal(remat_labeled_rows(t), 1797);
    assert_int_equal(remat_labeled_features(t), 64);
    assert_int_equal(remat_labeled_classes(t), 10);
    assert_string_equal(remat_labeled_feature_name(t, 0), "p0");
    assert_string_equal(remat_labeled_feature_name(t, 63), "p63");
    assert_null(remat_labeled_feature_name(t, 64));
    assert_null(remat_labeled_feature_name(t, -1));
    assert_string_equal(remat_labeled_label_name(t), "label");
    static const float row0[64] = {0, 0, 5,  13, 9, 1,  0,  0, 0, 0, 13, 15, 10, 15, 5,  0,
                                   0, 3, 15, 2,  0, 11, 8,  0, 0, 4, 12, 0,  0,  8,  8,  0,
                                   0, 5, 8,  0,  0, 9,  8,  0, 0, 4, 11, 0,  1,  12, 7,  0,
                                   0, 2, 14, 5,  10, 12, 0, 0, 0, 0, 6,  13, 10, 0,  0,  0};
    assert_memory_equal(remat_labeled_x(t), row0, sizeof row0);
    const int32_t *y = remat_labeled_y(t);
    assert_true(y[0] == 0 && y[1] == 1 && y[2] == 2 && y[1796] == 8);
    /* the UCI test set's class counts */
    int count[10] = {0};
    for (int r = 0; r < 1797; r++)
        count[y[r]]++;
    static const int want[10] = {178, 182, 177, 183, 181, 182, 181, 179, 174, 180};
    assert_memory_equal(count, want, sizeof want);
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < 1797 * 64; i++) {
        lo = fminf(lo, remat_labeled_x(t)[i]);
        hi = fmaxf(hi, remat_labeled_x(t)[i]);
    }
    assert_true(lo == 0 && hi == 16);
    assert_ok(remat_labeled_scale(t, 1.0 / 16));
    assert_true(remat_labeled_x(t)[2] == 5.0f / 16 && remat_labeled_x(t)[3] == 13.0f / 16);
    remat_labeled_free(t);
}

/* ---- the loader ---- */

static void test_nn_data_load_label_anywhere_bom_crlf_blank_lines(void **state)
{
    (void)state;
    const char csv[] = "\xEF\xBB\xBF"
                       "\r\n"
                       " x , class , \"y z\"\r\n"
                       "1.5, 2 ,-3e2\r\n"
                       "\r\n"
                       "+.25,0,4.\r\n";
    remat_labeled_options o = {.label_column = "class"};
    remat_labeled *t = load_text_(csv, sizeof csv - 1, &o, __FILE__, __LINE__);
    assert_int_equal(remat_labeled_rows(t), 2);
    assert_int_equal(remat_labeled_features(t), 2);
    assert_int_equal(remat_labeled_classes(t), 3);
    assert_string_equal(remat_labeled_feature_name(t, 0), "x");
    assert_string_equal(remat_labeled_feature_name(t, 1), "y z");
    assert_string_equal(remat_labeled_label_name(t), "class");
    const float *x = remat_labeled_x(t);
    assert_true(x[0] == 1.5f && x[1] == -300.0f && x[2] == 0.25f && x[3] == 4.0f);
    assert_true(remat_labeled_y(t)[0] == 2 && remat_labeled_y(t)[1] == 0);
    assert_true(remat_labeled_origin(t)[0] == 0 && remat_labeled_origin(t)[1] == 1);
    remat_labeled_free(t);

    o = (remat_labeled_options){.n_classes = 12};
    t = load_text("a,label\n1,3\n", &o);
    assert_int_equal(remat_labeled_classes(t), 12);
    remat_labeled_free(t);
    remat_labeled_free(NULL);
}

static void test_nn_data_load_errors_name_line_and_column(void **state)
{
    (void)state;
    /* shape of the rows */
    expect_error("a,b,label\n1,2,0\n1,2,3,0\n", 3, 4, "ragged row: expected 3 cells (the header's), found 4");
    expect_error("a,b,label\n1,2,0\n\n1,0\n", 4, 3, "ragged row: expected 3 cells (the header's), found 2");
    /* features */
    expect_error("a,b,label\n1,x,0\n", 2, 2, "column 'b': 'x' is not a number");
    expect_error("a,b,label\n1,2,0\n1,1.2.3,0\n", 3, 2, "'1.2.3' is not a number");
    expect_error("a,b,label\nnan,2,0\n", 2, 1, "column 'a': 'nan' is not a finite number");
    expect_error("a,b,label\n1,-Inf,0\n", 2, 2, "'-Inf' is not a finite number");
    expect_error("a,b,label\n1,1e39,0\n", 2, 2, "'1e39' is out of a float's range");
    expect_error("a,b,label\n1,,0\n", 2, 2, "column 'b': empty cell");
    /* labels */
    expect_error("a,label,b\n1,1.5,0\n", 2, 2, "label '1.5' is not an integer");
    expect_error("a,label,b\n1,two,0\n", 2, 2, "label 'two' is not an integer");
    expect_error("a,b,label\n1,2,\n", 2, 3, "empty label cell");
    expect_error("a,b,label\n1,2,0\n1,2,-1\n", 3, 3, "label '-1' is negative");
    expect_error("a,b,label\n1,2,65536\n", 2, 3, "label '65536' is too large");
    expect_error("a,b,label\n1,2,99999999999999999999\n", 2, 3, "is too large");
    expect_error_opt("a,b,label\n1,2,9\n1,2,10\n", (&(remat_labeled_options){.n_classes = 10}), 3, 3,
                     "label '10' is too large: n_classes is 10");
    /* the file and its header */
    expect_error("", 1, 1, "empty file");
    expect_error(" \n\r\n\n", 1, 1, "empty file");
    expect_error("\xEF\xBB\xBF", 1, 1, "empty file");
    expect_error("a,b,label\n", 1, 1, "a header and no rows");
    expect_error("\n\na,b,label\n\n", 3, 1, "a header and no rows");
    expect_error("a,b,a,label\n1,2,3,0\n", 1, 3, "duplicate column name 'a' (columns 1 and 3)");
    expect_error("a,,label\n1,2,0\n", 1, 2, "column 2 of the header has no name");
    expect_error("a,b,y\n1,2,0\n", 1, 1, "no label column 'label'");
    expect_error_opt("a,b,label\n1,2,0\n", (&(remat_labeled_options){.label_column = "digit"}), 1, 1,
                     "no label column 'digit'");
    expect_error("label\n0\n", 1, 1, "no features");
    expect_error("a\tb\tlabel\n1\t2\t0\n", 1, 1, "tab-separated");
    expect_error("a;b;label\n1;2;0\n", 1, 1, "semicolon-separated");
    static const char utf16le_bom[] = "\xFF\xFE" "a\0,\0l\0a\0b\0e\0l\0\n\0";
    expect_error_(utf16le_bom, sizeof utf16le_bom - 1, NULL, 1, 1, "UTF-16", __FILE__, __LINE__);
    static const char utf16be_bom[] = "\xFE\xFF" "\0a\0,\0l";
    expect_error_(utf16be_bom, sizeof utf16be_bom - 1, NULL, 1, 1, "UTF-16", __FILE__, __LINE__);
    static const char utf16le[] = "a\0,\0l\0a\0b\0e\0l\0\n\0";
    expect_error_(utf16le, sizeof utf16le - 1, NULL, 1, 1, "UTF-16", __FILE__, __LINE__);
    static const char nul[] = "a,label\n1,0\n2\0,1\n";
    expect_error_(nul, sizeof nul - 1, NULL, 3, 1, "NUL byte", __FILE__, __LINE__);
    expect_error("a,label\r1,0\r2,1\r", 1, 1, "lines end in CR only");
}

static void test_nn_data_load_bad_calls(void **state)
{
    (void)state;
    remat_labeled *t = (remat_labeled *)&t;
    assert_int_equal(remat_labeled_load("/nonexistent/remat/x.csv", NULL, &t), REMAT_ERR_IO);
    assert_null(t);
    assert_contains(remat_last_error(), "/nonexistent/remat/x.csv: cannot open");
    assert_int_equal(remat_labeled_load(NULL, NULL, &t), REMAT_ERR_NULL);
    assert_int_equal(remat_labeled_load("x.csv", NULL, NULL), REMAT_ERR_NULL);
    t = (remat_labeled *)&t;
    assert_int_equal(remat_labeled_load("x.csv", &(remat_labeled_options){.n_classes = -1}, &t), REMAT_ERR_VALUE);
    assert_null(t);
    assert_int_equal(remat_labeled_load("x.csv", &(remat_labeled_options){.label_column = ""}, &t),
                     REMAT_ERR_VALUE);
}

static void test_nn_data_scale_and_standardize(void **state)
{
    (void)state;
    remat_labeled *t = load_text("a,b,c,label\n1,5,2,0\n3,5,4,1\n5,5,9,0\n", NULL);
    assert_int_equal(remat_labeled_scale(t, 0), REMAT_ERR_VALUE);
    assert_int_equal(remat_labeled_scale(t, NAN), REMAT_ERR_VALUE);
    assert_int_equal(remat_labeled_scale(t, 1e38), REMAT_ERR_NUMERIC); /* 5e38 > FLT_MAX */
    assert_contains(remat_last_error(), "row 0, feature 'b'");
    assert_true(remat_labeled_x(t)[0] == 1.0f); /* untouched */
    assert_ok(remat_labeled_scale(t, 2));
    double mean[3], sd[3];
    assert_ok(remat_labeled_standardize(t, t, mean, sd));
    /* column a: 2, 6, 10: mean 6, population sd sqrt(32/3); b constant: sd 1 */
    assert_true(mean[0] == 6 && mean[1] == 10 && sd[1] == 1);
    assert_true(fabs(sd[0] - sqrt(32.0 / 3)) < 1e-15);
    const float *x = remat_labeled_x(t);
    assert_true(x[0] == (float)(-4 / sqrt(32.0 / 3)) && x[3] == 0.0f && x[1] == 0.0f && x[4] == 0.0f);
    remat_labeled *u = load_text("a,label\n1,0\n", NULL);
    assert_int_equal(remat_labeled_standardize(u, t, NULL, NULL), REMAT_ERR_SHAPE);
    remat_labeled_free(u);
    remat_labeled_free(t);
}

/* ---- random streams ---- */

static void test_nn_data_splitmix64_reference_values(void **state)
{
    (void)state;
    uint64_t s = 0; /* Vigna's splitmix64.c from state 0 */
    assert_true(remat_splitmix64_next(&s) == 0xe220a8397b1dcdafull);
    assert_true(remat_splitmix64_next(&s) == 0x6e789e6aa1b965f4ull);
    assert_true(remat_splitmix64_next(&s) == 0x06c45d188009454full);
    int64_t perm[10];
    s = 42; /* Python transcription of the documented shuffle */
    remat_splitmix64_shuffle(&s, 10, perm);
    assert_memory_equal(perm, ((int64_t[]){0, 9, 5, 8, 6, 4, 7, 2, 1, 3}), sizeof perm);
    s = 1;
    for (int i = 0; i < 1000; i++) {
        assert_true(remat_splitmix64_below(&s, 7) < 7);
        assert_true(remat_splitmix64_below(&s, 1) == 0);
    }
    assert_true(remat_splitmix64_below(&s, UINT64_MAX) < UINT64_MAX);
}

/* ---- split ---- */

static void test_nn_data_split_reproducible_disjoint_complete(void **state)
{
    (void)state;
    remat_labeled *t = digits(), *tr, *te, *tr2, *te2;
    assert_ok(remat_labeled_split(t, 0.2, 42, &tr, &te));
    assert_int_equal(remat_labeled_rows(te), 360); /* ceil(0.2 * 1797), as sklearn */
    assert_int_equal(remat_labeled_rows(tr), 1437);
    assert_int_equal(remat_labeled_features(tr), 64);
    assert_int_equal(remat_labeled_classes(te), 10);
    assert_string_equal(remat_labeled_feature_name(te, 5), "p5");
    unsigned char seen[1797] = {0};
    const remat_labeled *parts[2] = {tr, te};
    for (int p = 0; p < 2; p++) {
        const int64_t *org = remat_labeled_origin(parts[p]);
        for (int64_t r = 0; r < remat_labeled_rows(parts[p]); r++) {
            assert_true(org[r] >= 0 && org[r] < 1797 && !seen[org[r]]);
            assert_true(r == 0 || org[r] > org[r - 1]); /* kept in file order */
            seen[org[r]] = 1;
            assert_memory_equal(remat_labeled_x(parts[p]) + r * 64, remat_labeled_x(t) + org[r] * 64,
                                64 * sizeof(float));
            assert_int_equal(remat_labeled_y(parts[p])[r], remat_labeled_y(t)[org[r]]);
        }
    }
    for (int r = 0; r < 1797; r++)
        assert_true(seen[r]);
    /* the test part is the first 360 positions of the documented shuffle */
    int64_t *perm = xmalloc(1797 * sizeof *perm);
    uint64_t s = 42;
    remat_splitmix64_shuffle(&s, 1797, perm);
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 360; i++)
        seen[perm[i]] = 1;
    for (int r = 0; r < 360; r++)
        assert_true(seen[remat_labeled_origin(te)[r]]);
    free(perm);
    assert_ok(remat_labeled_split(t, 0.2, 42, &tr2, &te2));
    assert_memory_equal(remat_labeled_origin(te), remat_labeled_origin(te2), 360 * sizeof(int64_t));
    remat_labeled_free(tr2);
    remat_labeled_free(te2);
    assert_ok(remat_labeled_split(t, 0.2, 43, &tr2, &te2));
    assert_memory_not_equal(remat_labeled_origin(te), remat_labeled_origin(te2), 360 * sizeof(int64_t));
    remat_labeled_free(tr2);
    remat_labeled_free(te2);
    /* a part splits again; origins stay the file's */
    assert_ok(remat_labeled_split(tr, 0.5, 1, &tr2, &te2));
    assert_int_equal(remat_labeled_rows(te2), 719);
    assert_true(remat_labeled_origin(te2)[0] >= remat_labeled_origin(tr)[0]);
    remat_labeled_free(tr2);
    remat_labeled_free(te2);
    remat_labeled_free(tr);
    remat_labeled_free(te);
    remat_labeled_free(t);
}

static void test_nn_data_split_bad_fractions(void **state)
{
    (void)state;
    remat_labeled *t = counting_table(3), *tr = (remat_labeled *)&tr, *te = (remat_labeled *)&te;
    static const double bad[] = {0, 1, -0.1, 1.5, NAN, 0.999};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(remat_labeled_split(t, bad[i], 1, &tr, &te), REMAT_ERR_VALUE);
        assert_null(tr);
        assert_null(te);
    }
    assert_contains(remat_last_error(), "leaves 3 test and 0 train rows");
    assert_int_equal(remat_labeled_split(NULL, 0.5, 1, &tr, &te), REMAT_ERR_NULL);
    remat_labeled_free(t);
}

/* ---- batches ---- */

/* every row of the table once in epoch e's batches; returns the order seen */
static void check_epoch(remat_batcher *b, const remat_labeled *t, int64_t e, int64_t B, int drop, int64_t *seen_order)
{
    int64_t n = remat_labeled_rows(t), d = remat_labeled_features(t), c = remat_labeled_classes(t);
    float *x = xmalloc(sizeof *x * (size_t)(B * d)), *y = xmalloc(sizeof *y * (size_t)(B * c));
    int32_t *lab = xmalloc(sizeof *lab * (size_t)B);
    int *count = xcalloc((size_t)n, sizeof *count);
    int64_t k = 0;
    for (int64_t i = 0; i < remat_batcher_batches(b); i++) {
        int64_t size = -1;
        assert_ok(remat_batcher_fill(b, e, i, x, y, lab, &size));
        assert_true(size == (i + 1 < remat_batcher_batches(b) || drop || n % B == 0 ? B : n % B));
        for (int64_t r = 0; r < B; r++) {
            if (r >= size) { /* padding rows are zero */
                for (int64_t j = 0; j < d; j++)
                    assert_true(x[r * d + j] == 0);
                for (int64_t j = 0; j < c; j++)
                    assert_true(y[r * c + j] == 0);
                continue;
            }
            /* counting_table: feature a is the row number */
            int64_t row = (int64_t)x[r * d];
            assert_true(row >= 0 && row < n);
            count[row]++;
            seen_order[k++] = row;
            assert_int_equal(lab[r], remat_labeled_y(t)[row]);
            for (int64_t j = 0; j < c; j++)
                assert_true(y[r * c + j] == (j == lab[r] ? 1.0f : 0.0f));
        }
    }
    int64_t once = 0;
    for (int64_t r = 0; r < n; r++) {
        assert_true(count[r] <= 1);
        once += count[r];
    }
    assert_int_equal(once, drop ? n - n % B : n);
    free(x);
    free(y);
    free(lab);
    free(count);
}

static void test_nn_data_batcher_every_row_once_per_epoch(void **state)
{
    (void)state;
    remat_labeled *t = counting_table(103);
    int64_t o1[103], o2[103], o3[103];
    for (int drop = 0; drop <= 1; drop++) {
        remat_batcher *b, *b2;
        remat_batcher_options opt = {.batch_size = 10, .seed = 7, .drop_remainder = drop};
        assert_ok(remat_batcher_new(t, &opt, &b));
        assert_int_equal(remat_batcher_batches(b), drop ? 10 : 11);
        check_epoch(b, t, 0, 10, drop, o1);
        check_epoch(b, t, 1, 10, drop, o2);
        assert_memory_not_equal(o1, o2, 100 * sizeof(int64_t));
        /* epoch 0's order again, from a fresh batcher visited in another order */
        assert_ok(remat_batcher_new(t, &opt, &b2));
        check_epoch(b2, t, 5, 10, drop, o3);
        check_epoch(b2, t, 0, 10, drop, o3);
        assert_memory_equal(o1, o3, 100 * sizeof(int64_t));
        /* the documented order: shuffle from seed ^ (first splitmix64 output from e) */
        uint64_t e = 1, s = 7 ^ remat_splitmix64_next(&e);
        int64_t perm[103];
        remat_splitmix64_shuffle(&s, 103, perm);
        assert_memory_equal(remat_batcher_order(b, 1), perm, sizeof perm);
        remat_batcher_free(b);
        remat_batcher_free(b2);
    }
    /* pinned by the Python transcription: seed 7, epoch 3, 10 rows */
    remat_labeled *small = counting_table(10);
    remat_batcher *b;
    assert_ok(remat_batcher_new(small, &(remat_batcher_options){.batch_size = 4, .seed = 7}, &b));
    assert_memory_equal(remat_batcher_order(b, 3), ((int64_t[]){0, 1, 3, 5, 6, 9, 4, 8, 2, 7}), 10 * sizeof(int64_t));
    remat_batcher_free(b);
    /* in_order: table order every epoch */
    assert_ok(remat_batcher_new(small, &(remat_batcher_options){.batch_size = 4, .in_order = 1}, &b));
    int64_t o[10];
    check_epoch(b, small, 9, 4, 0, o);
    assert_memory_equal(o, ((int64_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), sizeof o);
    remat_batcher_free(b);
    remat_batcher_free(NULL);
    remat_labeled_free(small);
    remat_labeled_free(t);
}

static void test_nn_data_batcher_digits_one_hot(void **state)
{
    (void)state;
    remat_labeled *t = digits();
    remat_batcher *b;
    assert_ok(remat_batcher_new(t, &(remat_batcher_options){.batch_size = 128, .seed = 3}, &b));
    assert_int_equal(remat_batcher_batches(b), 15); /* 14 * 128 + 5 */
    float x[128 * 64], y[128 * 10];
    int64_t size;
    assert_ok(remat_batcher_fill(b, 2, 14, x, y, NULL, &size));
    assert_int_equal(size, 5);
    const int64_t *order = remat_batcher_order(b, 2);
    for (int k = 0; k < 5; k++) {
        int64_t r = order[14 * 128 + k];
        assert_memory_equal(x + k * 64, remat_labeled_x(t) + r * 64, 64 * sizeof(float));
        assert_true(y[k * 10 + remat_labeled_y(t)[r]] == 1.0f);
    }
    remat_batcher_free(b);
    remat_labeled_free(t);
}

static void test_nn_data_batcher_bad_calls(void **state)
{
    (void)state;
    remat_labeled *t = counting_table(5);
    remat_batcher *b = (remat_batcher *)&b;
    assert_int_equal(remat_batcher_new(t, &(remat_batcher_options){.batch_size = 0}, &b), REMAT_ERR_VALUE);
    assert_null(b);
    assert_int_equal(remat_batcher_new(t, &(remat_batcher_options){.batch_size = 6, .drop_remainder = 1}, &b),
                     REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "leaves no batch");
    assert_int_equal(remat_batcher_new(NULL, &(remat_batcher_options){.batch_size = 1}, &b), REMAT_ERR_NULL);
    assert_ok(remat_batcher_new(t, &(remat_batcher_options){.batch_size = 6}, &b));
    assert_int_equal(remat_batcher_batches(b), 1);
    float x[12], y[18];
    int64_t size;
    assert_int_equal(remat_batcher_fill(b, 0, 1, x, y, NULL, &size), REMAT_ERR_VALUE);
    assert_contains(remat_last_error(), "batch 1 is not in 0..0");
    assert_int_equal(remat_batcher_fill(b, -1, 0, x, y, NULL, &size), REMAT_ERR_VALUE);
    assert_int_equal(remat_batcher_fill(b, 0, 0, NULL, y, NULL, &size), REMAT_ERR_NULL);
    assert_null(remat_batcher_order(b, -1));
    assert_ok(remat_batcher_fill(b, 0, 0, x, y, NULL, &size));
    assert_int_equal(size, 5);
    remat_batcher_free(b);
    remat_labeled_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nn_data_digits_shape_and_first_row),
        cmocka_unit_test(test_nn_data_load_label_anywhere_bom_crlf_blank_lines),
        cmocka_unit_test(test_nn_data_load_errors_name_line_and_column),
        cmocka_unit_test(test_nn_data_load_bad_calls),
        cmocka_unit_test(test_nn_data_scale_and_standardize),
        cmocka_unit_test(test_nn_data_splitmix64_reference_values),
        cmocka_unit_test(test_nn_data_split_reproducible_disjoint_complete),
        cmocka_unit_test(test_nn_data_split_bad_fractions),
        cmocka_unit_test(test_nn_data_batcher_every_row_once_per_epoch),
        cmocka_unit_test(test_nn_data_batcher_digits_one_hot),
        cmocka_unit_test(test_nn_data_batcher_bad_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
