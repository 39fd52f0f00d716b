/*
 * test_dataset.c — measured-data CSV files against a mechanism's species:
 * values, missing cells, the initial-state check, and the error catalogue
 * (status plus a message starting with path:line and naming the column).
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remat/dataset.h"
#include "remat/mechanism.h"

static remat_mechanism *abc;

static int setup(void **state)
{
    (void)state;
    return remat_mechanism_parse_string("param k1 = 1\nparam k2 = 0.5\nA -> B : k1\nB -> C : k2\n",
                                        "abc.mech", &abc) == REMAT_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    remat_mechanism_free(abc);
    return 0;
}

static remat_dataset *read_ok_(const char *csv, const char *file, int line)
{
    char path[256];
    write_temp(path, sizeof path, "remat_data_", csv, strlen(csv));
    remat_dataset *d = NULL;
    if (remat_dataset_read(path, abc, &d) != REMAT_OK)
        fail_msg("%s:%d: read failed: %s\n--- csv ---\n%s", file, line, remat_last_error(), csv);
    unlink(path);
    return d;
}
#define read_ok(csv) read_ok_((csv), __FILE__, __LINE__)

/* The message must start with "<path>:<line>: " and contain `what`. */
static void expect_error_n(const void *bytes, size_t n, int line, const char *what, const char *file,
                           int src_line)
{
    char path[256], where[300];
    write_temp(path, sizeof path, "remat_data_", bytes, n);
    snprintf(where, sizeof where, "%s:%d: ", path, line);
    remat_dataset *d = (remat_dataset *)&d;
    remat_status st = remat_dataset_read(path, abc, &d);
    const char *msg = remat_last_error();
    if (st != REMAT_ERR_PARSE || strncmp(msg, where, strlen(where)) != 0 || !strstr(msg, what))
        fail_msg("%s:%d: got %s \"%s\"\n  want parse error \"%s...%s...\"", file, src_line,
                 remat_status_name(st), msg, where, what);
    assert_null(d);
    unlink(path);
}
#define expect_error(csv, line, what) expect_error_n((csv), strlen(csv), (line), (what), __FILE__, __LINE__)

/* ---- behaviour ---- */

static void test_dataset_read_subset_with_missing(void **state)
{
    (void)state;
    remat_dataset *d = read_ok("t,A,C\n"
                               "0,1.0,0.0\n"
                               "0.5,0.61,\n"
                               "1.0,,0.12\n");
    assert_int_equal(remat_dataset_rows(d), 3);
    assert_int_equal(remat_dataset_species_count(d), 3);
    assert_string_equal(remat_dataset_indep_name(d), "t");
    const double *t = remat_dataset_times(d);
    assert_true(t[0] == 0 && t[1] == 0.5 && t[2] == 1.0);
    assert_true(remat_dataset_value(d, 0, 0) == 1.0);
    assert_true(remat_dataset_value(d, 1, 0) == 0.61);
    assert_true(isnan(remat_dataset_value(d, 2, 0)));
    assert_false(remat_dataset_is_measured(d, 2, 0));
    assert_true(remat_dataset_is_measured(d, 2, 2));
    assert_true(remat_dataset_value(d, 2, 2) == 0.12);
    for (size_t r = 0; r < 3; r++) /* no column for B */
        assert_false(remat_dataset_is_measured(d, r, 1));
    assert_true(remat_dataset_has_column(d, 0) && !remat_dataset_has_column(d, 1));
    assert_false(remat_dataset_initial_complete(d)); /* B is not given */
    const double *row1 = remat_dataset_row(d, 1);
    assert_true(row1[0] == 0.61 && isnan(row1[1]) && isnan(row1[2]));
    remat_dataset_free(d);
    remat_dataset_free(NULL);
}

/* Columns in any order; CRLF, a BOM, quotes, spaces and blank lines. */
/* '# NAME = VALUE' before the header and condition columns (remat/dataset.h) */
static void test_dataset_conditions_and_initial_values(void **state)
{
    (void)state;
    remat_mechanism *m;
    assert_int_equal(remat_mechanism_parse_string("cond T = 300\ncond P = 1\nparam k = 1\nA -> B : k\n", "c.mech", &m),
                     REMAT_OK);
    const char *csv = "# an experiment at 350 K, k = unknown\n# T = 350\n  # A = 0.75\n#plain words\n"
                      "t,B,P\n1,0.1,2.5\n2,,2.5\n3,0.3,\n";
    char path[256];
    write_temp(path, sizeof path, "remat_data_", csv, strlen(csv));
    remat_dataset *d = NULL;
    assert_int_equal(remat_dataset_read(path, m, &d), REMAT_OK);
    assert_true(remat_dataset_cond(d, 0) == 350);
    assert_true(remat_dataset_cond(d, 1) == 2.5); /* the column's value, never data */
    assert_int_equal(remat_dataset_setting_line(d, 0, 0), 2);
    assert_int_equal(remat_dataset_setting_line(d, 1, 0), 6);
    assert_true(remat_dataset_initial(d, 0) == 0.75);
    assert_true(isnan(remat_dataset_initial(d, 1)));
    assert_int_equal(remat_dataset_setting_line(d, 0, 1), 3);
    assert_int_equal(remat_dataset_rows(d), 3);
    assert_int_equal(remat_dataset_line(d, 0), 6);
    assert_true(remat_dataset_value(d, 0, 1) == 0.1);
    assert_false(remat_dataset_has_column(d, 0));
    remat_dataset_free(d);
    unlink(path);
    /* a file that sets nothing: NaN */
    write_temp(path, sizeof path, "remat_data_", "t,A\n0,1\n", 8);
    assert_int_equal(remat_dataset_read(path, m, &d), REMAT_OK);
    assert_true(isnan(remat_dataset_cond(d, 0)) && isnan(remat_dataset_initial(d, 0)));
    assert_int_equal(remat_dataset_setting_line(d, 0, 0), 0);
    remat_dataset_free(d);
    unlink(path);
    remat_mechanism_free(m);
}

static void test_dataset_initial_state_and_format(void **state)
{
    (void)state;
    remat_dataset *d = read_ok("\xEF\xBB\xBF\"z\", C , \"A\",B\r\n"
                               "\r\n"
                               " 0 , 0 , 1 , 0 \r\n"
                               "2.5e-1,1e-3,+0.5,.25\r\n"
                               "  \t \r\n"
                               "5.,  , -0.0, 3\r\n");
    assert_string_equal(remat_dataset_indep_name(d), "z");
    assert_int_equal(remat_dataset_rows(d), 3);
    assert_true(remat_dataset_initial_complete(d));
    const double *r0 = remat_dataset_row(d, 0);
    assert_true(r0[0] == 1 && r0[1] == 0 && r0[2] == 0); /* A, B, C */
    const double *r1 = remat_dataset_row(d, 1);
    assert_true(remat_dataset_times(d)[1] == 0.25);
    assert_true(r1[0] == 0.5 && r1[1] == 0.25 && r1[2] == 1e-3);
    assert_true(remat_dataset_times(d)[2] == 5.0);
    assert_true(isnan(remat_dataset_value(d, 2, 2)));
    remat_dataset_free(d);
}

/* Several files are several experiments, each its own dataset. */
static void test_dataset_several_experiments(void **state)
{
    (void)state;
    remat_dataset *e1 = read_ok("t,A,B,C\n0,1,0,0\n1,0.4,0.5,0.1\n");
    remat_dataset *e2 = read_ok("time,B\n0,0.5\n2,0.3\n4,0.1\n");
    assert_int_equal(remat_dataset_rows(e1), 2);
    assert_int_equal(remat_dataset_rows(e2), 3);
    assert_true(remat_dataset_initial_complete(e1));
    assert_false(remat_dataset_initial_complete(e2));
    assert_string_equal(remat_dataset_indep_name(e2), "time");
    assert_true(remat_dataset_value(e2, 2, 1) == 0.1);
    remat_dataset_free(e1);
    remat_dataset_free(e2);
}

/* ---- the error catalogue ---- */

static void test_dataset_error_unknown_species(void **state)
{
    (void)state;
    expect_error("t,A,X\n0,1,2\n", 1, "unknown species column 'X' (column 3; the mechanism's species are A, B, C)");
    expect_error("t,a\n0,1\n", 1, "unknown species column 'a'"); /* names are case-sensitive */
    expect_error("A,B\n0,1\n", 1, "column 1 is species 'A'; the first column must be the independent variable");
    expect_error("t,,B\n0,1,2\n", 1, "column 2 of the header has no name");
}

static void test_dataset_error_duplicate_column(void **state)
{
    (void)state;
    expect_error("t,A,B,A\n0,1,2,3\n", 1, "duplicate column 'A' (columns 2 and 4)");
}

static void test_dataset_error_not_increasing(void **state)
{
    (void)state;
    expect_error("t,A\n0,1\n1,2\n1,3\n", 4, "column 't': 1 is not greater than 1 on the previous row");
    expect_error("t,A\n0,1\n\n-1,2\n", 4, "column 't': -1 is not greater than 0");
    expect_error("t,A\n0,1\n,2\n", 3, "column 't': empty cell");
}

static void test_dataset_error_bad_cells(void **state)
{
    (void)state;
    expect_error("t,A\n0,nan\n", 2, "column 'A': 'nan' is not a finite number (leave the cell empty");
    expect_error("t,A\n0,NaN\n", 2, "column 'A': 'NaN' is not a finite number");
    expect_error("t,A\n0,1\n1,-Infinity\n", 3, "column 'A': '-Infinity' is not a finite number");
    expect_error("t,A\ninf,1\n", 2, "column 't': 'inf' is not a finite number");
    expect_error("t,A\n0,1e999\n", 2, "column 'A': '1e999' is out of range");
    expect_error("t,A\n0,abc\n", 2, "column 'A': cannot read 'abc' as a number");
    expect_error("t,A\n0,1.2.3\n", 2, "column 'A': cannot read '1.2.3'");
    expect_error("t,A\n0,1e\n", 2, "column 'A': cannot read '1e'");
    expect_error("t,A\n0,0x10\n", 2, "column 'A': cannot read '0x10'");
    expect_error("t,A\n0,1 2\n", 2, "column 'A': cannot read '1 2'");
    expect_error("t,A\n0,-\n", 2, "column 'A': cannot read '-'");
}

static void test_dataset_error_ragged_rows(void **state)
{
    (void)state;
    expect_error("t,A\n0,1,2\n", 2, "too many cells: 3, the header has 2 columns (extra cell '2' after column 'A')");
    expect_error("t,A,B\n0,1,2\n1,2\n", 3, "too few cells: 2, the header has 3 columns (no cell for column 'B')");
    expect_error("t,A,B\n0,1,2\n1\n", 3, "no cell for column 'A'");
}

static void test_dataset_error_empty(void **state)
{
    (void)state;
    expect_error("", 1, "empty file (expected a header row)");
    expect_error("\n  \r\n\t\n", 1, "empty file");
    expect_error("t,A,B\n", 1, "header only, no data rows");
    expect_error("\n\nt,A,B\n\n", 3, "header only, no data rows");
}

static void test_dataset_error_binary(void **state)
{
    (void)state;
    const char nul[] = "t,A\n0,1\n1,\0\x01";
    expect_error_n(nul, sizeof nul - 1, 3, "NUL byte", __FILE__, __LINE__);
    expect_error("t,A\xff\xfe\n0,1\n", 1, "unknown species column 'A\\xff\\xfe'");
    expect_error("t,A\n0,\x80\x81\n", 2, "cannot read '\\x80\\x81'");

    uint64_t rng = 88172645463325252ull;
    for (int trial = 0; trial < 200; trial++) {
        unsigned char buf[400];
        size_t n = 1 + trial % sizeof buf;
        for (size_t i = 0; i < n; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            buf[i] = (unsigned char)(rng >> 24);
        }
        char path[256];
        write_temp(path, sizeof path, "remat_data_", buf, n);
        remat_dataset *d = NULL;
        assert_int_equal(remat_dataset_read(path, abc, &d), REMAT_ERR_PARSE);
        assert_null(d);
        assert_memory_equal(remat_last_error(), path, strlen(path));
        unlink(path);
    }
}

/* Files saved by spreadsheets and old editors: each is named for what it is,
 * not reported as an unknown column or a ragged row. */
static void test_dataset_error_encoding_and_separators(void **state)
{
    (void)state;
    static const char le_bom[] = "\xFF\xFEt\0,\0A\0\n\0" "0\0,\0" "1\0\n\0";
    expect_error_n(le_bom, sizeof le_bom - 1, 1, "UTF-16 text (byte-order mark FF FE)", __FILE__, __LINE__);
    static const char be_bom[] = "\xFE\xFF\0t\0,\0A\0\n";
    expect_error_n(be_bom, sizeof be_bom - 1, 1, "UTF-16 text (byte-order mark FE FF)", __FILE__, __LINE__);
    static const char le[] = "t\0,\0A\0\n\0" "0\0,\0" "1\0\n\0";
    expect_error_n(le, sizeof le - 1, 1, "UTF-16 text (NUL bytes between the characters)", __FILE__, __LINE__);
    expect_error("t,A\r0,1\r1,0.5\r", 1, "lines end in CR only");
    expect_error("t\tA\tB\n0\t1\t0\n", 1, "the header has tabs and no commas: a tab-separated file?");
    expect_error("\nt;A\n0;1\n", 2, "a semicolon-separated file?");
    remat_dataset *d = read_ok("t,A\r\n0,1\r\n"); /* CR LF is fine */
    assert_int_equal(remat_dataset_rows(d), 1);
    remat_dataset_free(d);
}

static void test_dataset_error_missing_file(void **state)
{
    (void)state;
    remat_dataset *d = (remat_dataset *)&d;
    assert_int_equal(remat_dataset_read("/nonexistent/run1.csv", abc, &d), REMAT_ERR_IO);
    assert_non_null(strstr(remat_last_error(), "/nonexistent/run1.csv"));
    assert_non_null(strstr(remat_last_error(), "No such file or directory"));
    assert_null(d);
    assert_int_equal(remat_dataset_read("/", abc, &d), REMAT_ERR_IO);
    assert_non_null(strstr(remat_last_error(), "Is a directory"));
    assert_int_equal(remat_dataset_read(NULL, abc, &d), REMAT_ERR_NULL);
    assert_int_equal(remat_dataset_read("x.csv", NULL, &d), REMAT_ERR_NULL);
}

/* What cannot be read whole is refused before a byte is read: /dev/zero
 * would fill memory, a FIFO without a writer would block. */
static void test_dataset_error_not_a_regular_file(void **state)
{
    (void)state;
    remat_dataset *d = (remat_dataset *)&d;
    assert_int_equal(remat_dataset_read("/dev/zero", abc, &d), REMAT_ERR_IO);
    assert_non_null(strstr(remat_last_error(), "/dev/zero: the data file is a character device, not a regular file"));
    assert_null(d);
    char fifo[] = "/tmp/remat-test-fifo-XXXXXX";
    int fd = mkstemp(fifo);
    assert_true(fd >= 0);
    close(fd);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(remat_dataset_read(fifo, abc, &d), REMAT_ERR_IO);
    assert_non_null(strstr(remat_last_error(), "the data file is a pipe (FIFO), not a regular file"));
    unlink(fifo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dataset_read_subset_with_missing),
        cmocka_unit_test(test_dataset_initial_state_and_format),
        cmocka_unit_test(test_dataset_several_experiments),
        cmocka_unit_test(test_dataset_error_unknown_species),
        cmocka_unit_test(test_dataset_error_duplicate_column),
        cmocka_unit_test(test_dataset_error_not_increasing),
        cmocka_unit_test(test_dataset_error_bad_cells),
        cmocka_unit_test(test_dataset_error_ragged_rows),
        cmocka_unit_test(test_dataset_error_empty),
        cmocka_unit_test(test_dataset_error_binary),
        cmocka_unit_test(test_dataset_error_encoding_and_separators),
        cmocka_unit_test(test_dataset_conditions_and_initial_values),
        cmocka_unit_test(test_dataset_error_missing_file),
        cmocka_unit_test(test_dataset_error_not_a_regular_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
