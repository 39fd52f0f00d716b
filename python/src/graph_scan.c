/* graph_scan.c — Fn.scan (remat/scan.h) and the checkpoint policies its
 * bodies, checkpoint() and nn.c take (None, a built-in's name, or (kind,
 * names)). */
#include "graph.h"

#include <string.h>

/* A policy from None, a built-in's name, or (kind, names). A new reference
 * (NULL policy: nothing_saveable); 0 with an exception. */
int rp_policy_of(PyObject *spec, remat_policy **out)
{
    *out = NULL;
    if (spec == Py_None)
        return 1;
    if (PyUnicode_Check(spec)) {
        const char *s = PyUnicode_AsUTF8(spec);
        const remat_policy *p = remat_policy_named(s); /* JAX's names and aliases */
        if (!p) {
            rp_raise_msg(REMAT_ERR_ARG, "policy: %s, or save_only_these_names(...), save_any_names_but_these(...), "
                                        "save_anything_except_these_names(...)", remat_last_error());
            return 0;
        }
        *out = remat_policy_ref(p);
        return 1;
    }
    const char *kind;
    PyObject *names;
    if (!PyArg_ParseTuple(spec, "sO:policy", &kind, &names))
        return 0;
    PyObject *seq = PySequence_Fast(names, "policy: names");
    if (!seq)
        return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **v = PyMem_Calloc((size_t)n + 1, sizeof *v);
    int ok = v != NULL;
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = (v[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i))) != NULL;
    if (ok) {
        if (!strcmp(kind, "save_only_these_names"))
            *out = remat_policy_save_only_these_names((int)n, v);
        else if (!strcmp(kind, "save_any_names_but_these"))
            *out = remat_policy_save_any_names_but_these((int)n, v);
        else if (!strcmp(kind, "save_anything_except_these_names"))
            *out = remat_policy_save_anything_except_these_names((int)n, v);
        else
            rp_raise_msg(REMAT_ERR_ARG, "policy kind '%s'", kind);
        if (!*out && !PyErr_Occurred())
            rp_raise(REMAT_ERR_ARG);
        ok = *out != NULL;
    }
    PyMem_Free(v);
    Py_DECREF(seq);
    return ok;
}

PyObject *rp_fn_scan(PyObject *self, PyObject *args)
{
    PyObject *lo, *body_obj, *io, *xo, *co, *policy_obj;
    long long length, unroll;
    const char *schedule;
    int reverse, ni, nx, nc;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OOLOOOzpOL:scan", &lo, &body_obj, &length, &io, &xo, &co, &schedule, &reverse,
                          &policy_obj, &unroll) ||
        !rp_get_loc(lo, &loc))
        return NULL;
    remat_fn *body = rp_fn_of(body_obj, "scan: body");
    if (!body)
        return NULL;
    remat_scan_options opt = {.reverse = reverse, .unroll = unroll};
    remat_status st;
    if (schedule && (st = remat_schedule_parse(schedule, &opt.schedule)) != REMAT_OK)
        return rp_raise(st);
    remat_policy *pol = NULL;
    if (!rp_policy_of(policy_obj, &pol))
        return NULL;
    opt.body_policy = pol;
    remat_val *init = rp_vals_in(io, "scan: init", &ni), *xs = init ? rp_vals_in(xo, "scan: xs", &nx) : NULL;
    remat_val *consts = xs ? rp_vals_in(co, "scan: consts", &nc) : NULL;
    int n_ys = remat_fn_num_outputs(body) - ni;
    remat_val *carry = consts ? PyMem_Malloc(sizeof *carry * (size_t)(ni + 1)) : NULL;
    remat_val *ys = carry ? PyMem_Malloc(sizeof *ys * (size_t)(n_ys > 0 ? n_ys + 1 : 1)) : NULL;
    PyObject *r = NULL;
    if (ys) {
        st = remat_scan_at(FN(self), body, length, ni, init, nx, xs, nc, consts, &opt, carry, n_ys > 0 ? ys : NULL,
                           loc);
        if (st != REMAT_OK || remat_fn_status(FN(self)) != REMAT_OK)
            r = remat_fn_status(FN(self)) != REMAT_OK ? rp_build_error(FN(self)) : rp_raise(st);
        else
            r = Py_BuildValue("(NN)", rp_vals_out(carry, ni), rp_vals_out(ys, n_ys > 0 ? n_ys : 0));
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    remat_policy_free(pol);
    PyMem_Free(init);
    PyMem_Free(xs);
    PyMem_Free(consts);
    PyMem_Free(carry);
    PyMem_Free(ys);
    return r;
}
