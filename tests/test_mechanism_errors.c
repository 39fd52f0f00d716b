/*
 * test_mechanism_errors.c — the mechanism format's error catalogue (status,
 * file:line:col prefix and the offending token), binary and overlong input,
 * and mutations of valid text. Run it under -Db_sanitize=address,undefined:
 * the fuzz cases are there to catch crashes and leaks, not wrong answers.
 */
#include "test_mechanism_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the error catalogue ---- */

static void test_mechanism_error_unbalanced_parentheses(void **state)
{
    (void)state;
    expect_error("param k = 1\nA -> B : (k * A\n", "mech.txt:2:10: ", "'(' is not closed");
    expect_error("param k = 1\nA -> B : k * A)\n", "mech.txt:2:15: ", "unmatched ')'");
    expect_error("param k = 1\nA -> B : (k * A B)\n", "mech.txt:2:17: ", "expected ')'");
    expect_error("param k = 1\nA -> B : exp(k\n", "mech.txt:2:13: ", "'(' of the call of 'exp' is not closed");
    expect_error("param k = 1\nA -> B : k * ()\n", "mech.txt:2:15: ", "got ')'");
}

static void test_mechanism_error_unknown_function(void **state)
{
    (void)state;
    expect_error("param k = 1\n\nA -> B : k * expp(1)\n", "mech.txt:3:14: ",
                 "unknown function 'expp' (expected exp, log, sqrt, log10, log1p, expm1, tanh, sin, cos, logistic "
                 "(or sigmoid), erf, abs, min, max, pow, arrhenius, arrhenius_ref)");
    expect_error("param k = 1\nA -> B : exp\n", "mech.txt:2:10: ", "'exp' is a function");
}

static void test_mechanism_error_function_arguments(void **state)
{
    (void)state;
    expect_error("param k = 1\nA -> B : min(k) * A\n", "mech.txt:2:10: ", "'min' takes 2, got 1");
    expect_error("param k = 1\nA -> B : exp(k, A)\n", "mech.txt:2:10: ", "'exp' takes 1, got 2");
    expect_error("param k = 1\n\nA -> B : rate = k * tanh(A, k)\n", "mech.txt:3:21: ", "'tanh' takes 1, got 2");
    expect_error("param k = 1\nA -> B : rate = pow(A) * k\n", "mech.txt:2:17: ", "'pow' takes 2, got 1");
    expect_error("param k = 1\nA -> B : rate = k * sigmoid(A, A)\n", "mech.txt:2:21: ", "'sigmoid' takes 1, got 2");
    expect_error("param k = 1\nA -> B : k * max(1, 2, 3)\n", "mech.txt:2:14: ", "'max' takes 2, got 3");
    expect_error("param k = 1\nA -> B : k * sqrt()\n", "mech.txt:2:14: ", "'sqrt' takes 1, got 0");
}

static void test_mechanism_error_duplicate_param(void **state)
{
    (void)state;
    expect_error("param k = 1\nparam k = 2\nA -> B : k\n", "mech.txt:2:7: ",
                 "parameter 'k' declared twice (first at line 1)");
    expect_error("const k = 1\nparam k = 2\nA -> B : k\n", "mech.txt:2:7: ", "'k' is a const");
}

static void test_mechanism_error_duplicate_species(void **state)
{
    (void)state;
    expect_error("species A B A\nparam k = 1\nA -> B : k\n", "mech.txt:1:13: ",
                 "species 'A' declared twice (first at line 1)");
    expect_error("species A B\nspecies B\nparam k = 1\nA -> B : k\n", "mech.txt:2:9: ",
                 "species 'B' declared twice");
}

static void test_mechanism_error_bad_number(void **state)
{
    (void)state;
    expect_error("param k = 1.2.3\nA -> B : k\n", "mech.txt:1:11: ", "bad number '1.2.3'");
    expect_error("param k = 1e\nA -> B : k\n", "mech.txt:1:11: ", "bad number '1e'");
    expect_error("param k = 1e+\nA -> B : k\n", "mech.txt:1:11: ", "bad number '1e+'");
    expect_error("param k = 3x\nA -> B : k\n", "mech.txt:1:11: ", "bad number '3x'");
    expect_error("param k = 1\n2A -> B : k\n", "mech.txt:2:1: ", "bad number '2A' (put a space");
    expect_error("param k = 1e999\nA -> B : k\n", "mech.txt:1:11: ", "number '1e999' is out of range");
    expect_error("param k = 1\n1.5 A -> B : k\n", "mech.txt:2:1: ",
                 "stoichiometric coefficient '1.5' must be an integer");
    expect_error("param k = 1\n0 A -> B : k\n", "mech.txt:2:1: ", "coefficient '0'");
}

static void test_mechanism_error_species_as_param(void **state)
{
    (void)state;
    expect_error("A -> B : A\n", "mech.txt:1:10: ", "'A' is a species, but a rate given as a single name");
    expect_error("A -> B : k\nparam A = 1\nparam k = 1\n", "mech.txt:2:7: ",
                 "'A' is a species (line 1) and cannot also be a parameter");
    expect_error("param k = 1\nA <=> B : k, B\n", "mech.txt:2:14: ", "'B' is a species");
    expect_error("param k = A\nA -> B : k\n", "mech.txt:1:11: ",
                 "'A' is a species, but values and bounds may use only numbers and consts");
    expect_error("A -> B : t\n", "mech.txt:1:10: ", "'t' is the independent variable, but a rate");
}

static void test_mechanism_error_param_as_species(void **state)
{
    (void)state;
    expect_error("param k = 1\nk -> B : k\n", "mech.txt:2:1: ",
                 "'k' is a parameter (line 1) and cannot be used as a species");
    expect_error("param y = 1\ny' = -y\n", "mech.txt:2:1: ", "'y' is a parameter");
    expect_error("let k = 1\nspecies k\nk -> B : 1\n", "mech.txt:2:9: ", "'k' is a let");
}

static void test_mechanism_error_unknown_name(void **state)
{
    (void)state;
    expect_error("param k1 = 1\nA -> B : k3\n", "mech.txt:2:10: ", "unknown name 'k3'");
    expect_error("param k1 = 1\nA -> B : k1 * A * Z\n", "mech.txt:2:19: ", "unknown name 'Z'");
    expect_error("param k = R\nA -> B : k\n", "mech.txt:1:11: ", "unknown name 'R'");
    expect_error("param k = 1\ny' = -k * y * t2\n", "mech.txt:2:15: ", "unknown name 't2'");
    expect_error("param k = 1\nA -> B : k * inf\n", "mech.txt:2:14: ", "'inf' is allowed only in bounds");
}

static void test_mechanism_error_missing_colon(void **state)
{
    (void)state;
    expect_error("param k1 = 1\nA -> B k1\n", "mech.txt:2:8: ", "missing ':' before the rate");
    expect_error("param k1 = 1\nA -> B k1\n", "mech.txt:2:8: ", "'k1'");
    expect_error("param k1 = 1\nA -> B\n", "mech.txt:2:7: ", "missing ':' before the rate: expected '+' or ':', got end of line");
    expect_error("param k1 = 1\nA B -> C : k1\n", "mech.txt:2:3: ", "expected '+', '->' or '<=>' in a reaction, got 'B'");
    expect_error("k1 = 1\n", "mech.txt:1:4: ", "unexpected '='");
}

static void test_mechanism_error_empty_reaction(void **state)
{
    (void)state;
    expect_error("param k = 1\n-> :k\n", "mech.txt:2:1: ", "empty reaction");
    expect_error("param k = 1\n  <=> : k, k\n", "mech.txt:2:3: ", "empty reaction");
    expect_error("param k = 1\nA + -> B : k\n", "mech.txt:2:5: ", "expected a species after '+', got '->'");
}

static void test_mechanism_error_bounds(void **state)
{
    (void)state;
    expect_error("param k = 5 in [10, 1]\nA -> B : k\n", "mech.txt:1:16: ",
                 "bounds of parameter 'k' are reversed: lo 10 > hi 1");
    expect_error("param k = 200 in [0, 100]\nA -> B : k\n", "mech.txt:1:11: ",
                 "value 200 of parameter 'k' is outside its bounds [0, 100]");
    expect_error("param k = 1 in [0 100]\nA -> B : k\n", "mech.txt:1:19: ", "expected ','");
    expect_error("param k = 1 in (0, 100)\nA -> B : k\n", "mech.txt:1:16: ", "expected '[' after 'in'");
    expect_error("param k = 1 on [0, 1]\nA -> B : k\n", "mech.txt:1:13: ", "'on'");
    expect_error("param k = log(0)\nA -> B : k\n", "mech.txt:1:11: ", "value of parameter 'k' is not finite");
}

static void test_mechanism_error_let(void **state)
{
    (void)state;
    expect_error("param k = 1\nlet d = k\nlet d = 2 * k\nA -> B : d\n", "mech.txt:3:5: ",
                 "let 'd' defined twice (first at line 2)");
    expect_error("param k = 1\nA -> B : d\nlet d = 2 * k\n", "mech.txt:2:10: ",
                 "let 'd' used before its definition (line 3)");
    expect_error("param k = 1\nlet d = d + k\nA -> B : d\n", "mech.txt:2:9: ", "let 'd' used before its definition");
    expect_error("param k = R\nconst R = 1\nA -> B : k\n", "mech.txt:1:11: ", "const 'R' used before its definition");
    expect_error("param k = 1\nlet d = k\nparam d = 2\nA -> B : d\n", "mech.txt:3:7: ", "'d' is a let");
}

static void test_mechanism_error_ode_and_reaction(void **state)
{
    (void)state;
    expect_error("param k = 1\ny1' = -k * y1\ny1 -> y2 : k\n", "mech.txt:3:1: ",
                 "species 'y1' has an ODE (line 2) and is also in a reaction (line 3)");
    expect_error("param k = 1\ny1 -> y2 : k\ny2' = k * y1\n", "mech.txt:3:1: ",
                 "species 'y2' has an ODE (line 3) and is also in a reaction (line 2)");
    expect_error("param k = 1\ny' = -k * y\ny' = k\n", "mech.txt:3:1: ", "second ODE for 'y' (first at line 2)");
    expect_error("param k = 1\ny = -k * y\n", "mech.txt:2:3: ", "unexpected '='");
    expect_error("param k = 1\ny' -k * y\n", "mech.txt:2:4: ", "expected '=' after \"y'\"");
}

static void test_mechanism_error_unexpected_character(void **state)
{
    (void)state;
    expect_error("param k = 1\nA -> B : k @ 2\n", "mech.txt:2:12: ", "unexpected character '@'");
    expect_error("param k = 1\nA -> B : k \xc3\xa9\n", "mech.txt:2:12: ", "unexpected character '\xc3\xa9'");
    expect_error("param k = 1\nA <- B : k\n", "mech.txt:2:3: ", "unexpected character '<'");
    expect_error("param k = 1\nA -> B : k\x07\n", "mech.txt:2:11: ", "unexpected control character 0x07");
    expect_error("param k = 1\n(A -> B : k\n", "mech.txt:2:1: ", "expected a reaction, an ODE");
}

static void test_mechanism_error_trailing_garbage(void **state)
{
    (void)state;
    expect_error("param k = 1 2\nA -> B : k\n", "mech.txt:1:13: ", "unexpected '2' after the value of 'k'");
    expect_error("param k = 1\nA -> B : k k\n", "mech.txt:2:12: ", "unexpected 'k' after the rate");
    expect_error("param k = 1\nA -> B : k, k\n", "mech.txt:2:11: ", "an irreversible reaction ('->') has one rate");
    expect_error("param k = 1\nA <=> B : k\n", "mech.txt:2:12: ", "needs two rates");
    expect_error("species A 2\nparam k = 1\nA -> B : k\n", "mech.txt:1:11: ", "unexpected '2' after the species list");
    expect_error("indep z q\nparam k = 1\nA -> B : k\n", "mech.txt:1:9: ", "unexpected 'q'");
    expect_error("const c = 1 ]\nparam k = 1\nA -> B : k\n", "mech.txt:1:13: ", "unexpected ']' after the value");
}

static void test_mechanism_error_empty(void **state)
{
    (void)state;
    expect_error("", "mech.txt:1:1: ", "empty file: no reactions or ODEs");
    expect_error("# nothing but a comment\n\n", "mech.txt:3:1: ", "no reactions or ODEs");
    expect_error("param k = 1\nconst c = 2\n", "mech.txt:3:1: ", "no reactions or ODEs");
}

static void test_mechanism_error_names(void **state)
{
    (void)state;
    expect_error("param exp = 1\nA -> B : 1\n", "mech.txt:1:7: ", "'exp' is a reserved word");
    expect_error("species A inf\nA -> B : 1\n", "mech.txt:1:11: ", "'inf' is a reserved word");
    expect_error("param t = 1\nA -> B : t * A\n", "mech.txt:1:7: ", "'t' is the independent variable");
    expect_error("indep z\nindep w\nA -> B : 1\n", "mech.txt:2:1: ", "'indep' given twice");
    expect_error("indep A\nA -> B : 1\n", "mech.txt:2:1: ", "'A' is the independent variable (line 1)");
    expect_error("species A\nparam k = 1\nA -> B : k\n", "mech.txt:3:6: ",
                 "species 'B' is not in the 'species' list (line 1)");
    expect_error("param = 1\nA -> B : 1\n", "mech.txt:1:7: ", "expected a name after 'param', got '='");
    expect_error("const c 1\nA -> B : 1\n", "mech.txt:1:9: ", "expected '=' after 'const c', got '1'");
    expect_error("species\nA -> B : 1\n", "mech.txt:1:8: ", "expected species names after 'species'");
    expect_error("const c = log(-1)\nA -> B : c\n", "mech.txt:1:11: ", "value of const 'c' is not finite (NaN)");
}

/* NUL bytes and invalid UTF-8, through a file (NULs cannot be in a C string). */
static void test_mechanism_error_binary(void **state)
{
    (void)state;
    char path[256], want[300];
    const char nul[] = "param k = 1\nA -> B : k\0\x01\x02";
    write_temp(path, sizeof path, "remat_mech_", nul, sizeof nul - 1);
    remat_mechanism *m = NULL;
    assert_int_equal(remat_mechanism_parse_file(path, &m), REMAT_ERR_PARSE);
    snprintf(want, sizeof want, "%s:2:11: NUL byte", path);
    assert_non_null(strstr(remat_last_error(), want));
    assert_null(m);
    unlink(path);

    expect_error("param k = 1\n# comment \xff\xfe\nA -> B : k\n", "mech.txt:2:11: ", "invalid UTF-8 byte 0xff");
    expect_error("A -> B\x80 : 1\n", "mech.txt:1:7: ", "invalid UTF-8 byte 0x80");
    expect_error("# overlong \xc0\xaf\n", "mech.txt:1:12: ", "invalid UTF-8 byte 0xc0");
    expect_error("# surrogate \xed\xa0\x80\n", "mech.txt:1:13: ", "invalid UTF-8 byte 0xed");
    expect_error("# cut \xe2\x82\n", "mech.txt:1:7: ", "invalid UTF-8 byte 0xe2");

    /* random binary files: a parse error every time, no crash, no leak */
    for (int trial = 0; trial < 200; trial++) {
        unsigned char buf[512];
        size_t n = 1 + next_rand() % sizeof buf;
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)next_rand();
        buf[next_rand() % n] = trial % 2 ? 0 : 0xff;
        write_temp(path, sizeof path, "remat_mech_", buf, n);
        assert_int_equal(remat_mechanism_parse_file(path, &m), REMAT_ERR_PARSE);
        assert_null(m);
        assert_non_null(strstr(remat_last_error(), path));
        unlink(path);
    }
}

static void test_mechanism_error_long_lines(void **state)
{
    (void)state;
    size_t n = 70000;
    char *text = malloc(n + 64);
    /* a line past the limit */
    strcpy(text, "param k = 1\nA -> B : k ");
    size_t o = strlen(text);
    memset(text + o, ' ', n - o);
    strcpy(text + n, "\n");
    expect_error(text, "mech.txt:2:65537: ", "line longer than 65536 bytes");
    /* a long valid line: a sum of 1500 terms */
    o = (size_t)sprintf(text, "param k = 1\nA -> B : k");
    for (int i = 0; i < 1500; i++)
        o += (size_t)sprintf(text + o, " + k");
    strcpy(text + o, "\n");
    remat_mechanism *m = parse_ok(text);
    double y[2] = {1, 0}, p = 1, d[2];
    remat_mechanism_eval_rhs(m, 0, y, &p, d);
    expect_close(d[1], 1501);
    remat_mechanism_free(m);
    /* too deep: 3000 terms; nested parentheses; a long name; a long number */
    o = (size_t)sprintf(text, "param k = 1\nA -> B : k");
    for (int i = 0; i < 3000; i++)
        o += (size_t)sprintf(text + o, " + k");
    expect_error(text, "mech.txt:2:", "expression too long: more than 2000 operations deep");
    o = (size_t)sprintf(text, "param k = 1\nA -> B : ");
    for (int i = 0; i < 1000; i++)
        text[o++] = '(';
    strcpy(text + o, "k");
    expect_error(text, "mech.txt:2:267: ", "expression nested too deeply (more than 256 levels)");
    o = (size_t)sprintf(text, "param ");
    memset(text + o, 'k', 1000);
    strcpy(text + o + 1000, " = 1\n");
    expect_error(text, "mech.txt:1:7: ", "is too long (more than 64 bytes)");
    o = (size_t)sprintf(text, "param k = ");
    memset(text + o, '7', 1000);
    strcpy(text + o + 1000, "\n");
    expect_error(text, "mech.txt:1:11: ", "'7777777777");
    free(text);
}

/* Mutations of a valid file: each parses or fails with a parse error. */
static void test_mechanism_fuzz_mutations(void **state)
{
    (void)state;
    const char *seed = "species A B C\nconst R = 8.314\nparam k1 = 1.0 in [0, 100]\n"
                       "param k2 = 0.5\nlet k3 = k1 * exp(-1 / (R * t))\n"
                       "2 A + B <=> C : k1, k2\nC -> : k3 * min(C, 2) ^ 0.5\n";
    size_t n = strlen(seed);
    const char alphabet[] = "AB()+-*/^:,=#'<>[]\n 0.5e";
    char buf[512];
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(buf, seed, n + 1);
        int edits = 1 + (int)(next_rand() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = next_rand() % n;
            switch (next_rand() % 3) {
            case 0: buf[at] = alphabet[next_rand() % (sizeof alphabet - 1)]; break;
            case 1: buf[at] = '\0'; break; /* truncation */
            default: memmove(buf + at, buf + at + 1, n - at); break;
            }
        }
        remat_mechanism *m = NULL;
        remat_status st = remat_mechanism_parse_string(buf, "mech.txt", &m);
        if (st == REMAT_OK) {
            int ns = remat_mechanism_species_count(m), np = remat_mechanism_param_count(m);
            double y[16] = {0}, p[16] = {0}, d[16];
            if (ns <= 16 && np <= 16)
                remat_mechanism_eval_rhs(m, 0.5, y, p, d);
            remat_mechanism_free(m);
        } else {
            assert_int_equal(st, REMAT_ERR_PARSE);
            assert_null(m);
            assert_memory_equal(remat_last_error(), "mech.txt:", 9);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mechanism_error_unbalanced_parentheses),
        cmocka_unit_test(test_mechanism_error_unknown_function),
        cmocka_unit_test(test_mechanism_error_function_arguments),
        cmocka_unit_test(test_mechanism_error_duplicate_param),
        cmocka_unit_test(test_mechanism_error_duplicate_species),
        cmocka_unit_test(test_mechanism_error_bad_number),
        cmocka_unit_test(test_mechanism_error_species_as_param),
        cmocka_unit_test(test_mechanism_error_param_as_species),
        cmocka_unit_test(test_mechanism_error_unknown_name),
        cmocka_unit_test(test_mechanism_error_missing_colon),
        cmocka_unit_test(test_mechanism_error_empty_reaction),
        cmocka_unit_test(test_mechanism_error_bounds),
        cmocka_unit_test(test_mechanism_error_let),
        cmocka_unit_test(test_mechanism_error_ode_and_reaction),
        cmocka_unit_test(test_mechanism_error_unexpected_character),
        cmocka_unit_test(test_mechanism_error_trailing_garbage),
        cmocka_unit_test(test_mechanism_error_empty),
        cmocka_unit_test(test_mechanism_error_names),
        cmocka_unit_test(test_mechanism_error_binary),
        cmocka_unit_test(test_mechanism_error_long_lines),
        cmocka_unit_test(test_mechanism_fuzz_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
