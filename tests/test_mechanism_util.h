/*
 * test_mechanism_util.h — what test_mechanism.c and test_mechanism_errors.c
 * share: parse a text that must parse, expect a parse error at a place,
 * compare a right-hand side's text or value, and a fixed-seed generator.
 *
 *   remat_mechanism *m = parse_ok("param k = 1\nA -> B : k\n");
 *   expect_error("param k = 1\nA -> B : k * A)\n", "mech.txt:2:15: ", "unmatched ')'");
 */
#ifndef REMAT_TEST_MECHANISM_UTIL_H
#define REMAT_TEST_MECHANISM_UTIL_H

#include <stdint.h>

#include "test_util.h"

#include "remat/mechanism.h"

/* text parsed as "mech.txt"; fails the test (naming file:line) when it does not parse */
remat_mechanism *parse_ok_(const char *text, const char *file, int line);
#define parse_ok(text) parse_ok_((text), __FILE__, __LINE__)

/* The message must start with `where` ("mech.txt:3:14: ") and contain `what`. */
void expect_error_(const char *text, const char *where, const char *what, const char *file, int line);
#define expect_error(text, where, what) expect_error_((text), (where), (what), __FILE__, __LINE__)

/* species' right-hand side formatted (remat_expr_format) is want */
void expect_rhs_text(const remat_mechanism *m, int species, const char *want);
/* |got - want| <= 1e-13 (1 + |want|) */
void expect_close(double got, double want);
/* xorshift64 from a fixed seed, one sequence per process */
uint32_t next_rand(void);

#endif
