/* problems.c — reference problems for schedule comparisons (see remat/problems.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "remat/problems.h"

enum { PFR_EULER, SIN_CHAIN };

struct remat_problem {
    int kind;
    int64_t steps;
    int n_in;
    remat_tensor in[3];
    double y0[3], k[2], *x;
};

static const struct {
    const char *name, *description;
} known[] = {
    [PFR_EULER] = {"pfr-euler", "A->B->C plug-flow reactor, explicit Euler, L=10, loss -C_B(L), grad (k1, k2)"},
    [SIN_CHAIN] = {"sin", "x=ones(100), x <- sin(x) + 0.1 x per step, loss sum(x), grad x"},
};

remat_status remat_problem_new(const char *name, int64_t steps, remat_problem **out)
{
    if (!out)
        return remat_error(REMAT_ERR_NULL, "problem: output pointer is NULL");
    *out = NULL;
    int kind = -1;
    for (int i = 0; i < 2 && name; i++)
        if (!strcmp(name, known[i].name))
            kind = i;
    if (kind < 0)
        return remat_error(REMAT_ERR_ARG, "unknown problem '%s' (expected pfr-euler or sin)", name ? name : "(null)");
    if (steps < 0)
        return remat_error(REMAT_ERR_VALUE, "problem %s: steps %lld is negative", name, (long long)steps);
    remat_problem *p = calloc(1, sizeof *p);
    if (!p)
        return remat_error(REMAT_ERR_NOMEM, "problem: out of memory");
    p->kind = kind;
    p->steps = steps;
    if (kind == PFR_EULER) {
        p->y0[0] = 1.0;
        p->k[0] = 1.0;
        p->k[1] = 0.5;
        p->n_in = 3;
        p->in[0] = remat_tensor_f64(p->y0, 1, (int64_t[]){3});
        p->in[1] = remat_tensor_f64(&p->k[0], 0, NULL);
        p->in[2] = remat_tensor_f64(&p->k[1], 0, NULL);
    } else {
        p->x = malloc(sizeof *p->x * 100);
        if (!p->x) {
            free(p);
            return remat_error(REMAT_ERR_NOMEM, "problem: out of memory");
        }
        for (int i = 0; i < 100; i++)
            p->x[i] = 1.0;
        p->n_in = 1;
        p->in[0] = remat_tensor_f64(p->x, 1, (int64_t[]){100});
    }
    *out = p;
    return REMAT_OK;
}

void remat_problem_free(remat_problem *p)
{
    if (!p)
        return;
    free(p->x);
    free(p);
}

const char *remat_problem_name(const remat_problem *p) { return known[p->kind].name; }
const char *remat_problem_description(const remat_problem *p) { return known[p->kind].description; }
int64_t remat_problem_steps(const remat_problem *p) { return p->steps; }
int remat_problem_num_inputs(const remat_problem *p) { return p->n_in; }
const remat_tensor *remat_problem_inputs(const remat_problem *p) { return p->in; }
int remat_problem_num_grads(const remat_problem *p) { return p->kind == PFR_EULER ? 2 : 1; }

const char *remat_problem_grad_name(const remat_problem *p, int i)
{
    static const char *pfr[] = {"k1", "k2"};
    return p->kind == PFR_EULER ? pfr[i] : "x";
}

/* y' = y + h * [-k1 A, k1 A - k2 B, k2 B] */
static remat_fn *euler_body(double h)
{
    remat_fn *b = remat_fn_new("pfr_euler_step");
    remat_val y = remat_arg(b, "y", REMAT_F64, 1, (int64_t[]){3});
    remat_val k1 = remat_arg(b, "k1", REMAT_F64, 0, NULL);
    remat_val k2 = remat_arg(b, "k2", REMAT_F64, 0, NULL);
    remat_val r1 = remat_mul(b, k1, remat_index(b, y, 0));
    remat_val r2 = remat_mul(b, k2, remat_index(b, y, 1));
    int64_t one[1] = {1};
    remat_val parts[3] = {remat_reshape(b, remat_neg(b, r1), 1, one), remat_reshape(b, remat_sub(b, r1, r2), 1, one),
                          remat_reshape(b, r2, 1, one)};
    remat_val dy = remat_concatenate(b, 3, parts, 0);
    remat_fn_output(b, remat_add(b, y, remat_mul_scalar(b, dy, h)));
    return b;
}

static remat_fn *sin_body(void)
{
    remat_fn *b = remat_fn_new("sin_step");
    remat_val x = remat_arg(b, "x", REMAT_F64, 1, (int64_t[]){100});
    remat_fn_output(b, remat_add(b, remat_sin(b, x), remat_mul_scalar(b, x, 0.1)));
    return b;
}

remat_status remat_problem_build(const remat_problem *p, const remat_scan_options *opt, remat_fn **out)
{
    if (!p || !out)
        return remat_error(REMAT_ERR_NULL, "problem build: NULL argument");
    *out = NULL;
    remat_fn *f = remat_fn_new(known[p->kind].name);
    remat_fn *body;
    remat_status st;
    remat_val carry;
    if (p->kind == PFR_EULER) {
        body = euler_body(p->steps > 0 ? 10.0 / (double)p->steps : 0.0);
        remat_val y0 = remat_arg(f, "y0", REMAT_F64, 1, (int64_t[]){3});
        remat_val k[2] = {remat_arg(f, "k1", REMAT_F64, 0, NULL), remat_arg(f, "k2", REMAT_F64, 0, NULL)};
        st = remat_scan(f, body, p->steps, 1, &y0, 0, NULL, 2, k, opt, &carry, NULL);
        if (st == REMAT_OK)
            remat_fn_output(f, remat_neg(f, remat_index(f, carry, 1)));
    } else {
        body = sin_body();
        remat_val x = remat_arg(f, "x", REMAT_F64, 1, (int64_t[]){100});
        st = remat_scan(f, body, p->steps, 1, &x, 0, NULL, 0, NULL, opt, &carry, NULL);
        if (st == REMAT_OK)
            remat_fn_output(f, remat_sum_all(f, carry));
    }
    remat_fn_free(body);
    if (st == REMAT_OK) {
        static const int pfr_wrt[2] = {1, 2}, sin_wrt[1] = {0};
        st = p->kind == PFR_EULER ? remat_value_and_grad(f, 2, pfr_wrt, out) : remat_value_and_grad(f, 1, sin_wrt, out);
    }
    remat_fn_free(f);
    return st;
}
