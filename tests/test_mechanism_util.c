/* test_mechanism_util.c — the helpers of the mechanism suites (test_mechanism_util.h). */
#include "test_mechanism_util.h"

#include <math.h>
#include <string.h>

remat_mechanism *parse_ok_(const char *text, const char *file, int line)
{
    remat_mechanism *m = NULL;
    remat_status st = remat_mechanism_parse_string(text, "mech.txt", &m);
    if (st != REMAT_OK)
        fail_msg("%s:%d: parse failed: %s\n--- text ---\n%s", file, line, remat_last_error(), text);
    return m;
}

void expect_error_(const char *text, const char *where, const char *what, const char *file, int line)
{
    remat_mechanism *m = (remat_mechanism *)&m; /* must be reset to NULL */
    remat_status st = remat_mechanism_parse_string(text, "mech.txt", &m);
    const char *msg = remat_last_error();
    if (st != REMAT_ERR_PARSE || strncmp(msg, where, strlen(where)) != 0 || !strstr(msg, what))
        fail_msg("%s:%d: got %s \"%s\"\n  want parse error \"%s...%s...\"\n--- text ---\n%s", file, line,
                 remat_status_name(st), msg, where, what, text);
    assert_null(m);
}

void expect_rhs_text(const remat_mechanism *m, int species, const char *want)
{
    char buf[512];
    remat_expr_format(remat_mechanism_rhs(m, species), buf, sizeof buf);
    assert_string_equal(buf, want);
}

void expect_close(double got, double want)
{
    double tol = 1e-13 * (1 + fabs(want));
    if (!(fabs(got - want) <= tol))
        fail_msg("got %.17g, want %.17g", got, want);
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
