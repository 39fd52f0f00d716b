/* graph_transforms.c — the transforms of a Fn (remat/ad.h): vjp, grad,
 * value_and_grad, jvp, jacfwd, hvp, checkpoint, and the saved-residuals
 * report. */
#include "graph.h"

static int argnums_in(PyObject *obj, int *out, int *n)
{
    int64_t v[REMAT_MAX_RANK * 8];
    PyObject *seq = PySequence_Fast(obj, "argnums: expected a sequence of ints");
    if (!seq)
        return 0;
    *n = (int)PySequence_Fast_GET_SIZE(seq);
    int ok = *n <= 64;
    if (!ok)
        rp_raise_msg(REMAT_ERR_ARG, "argnums: %d entries, at most 64", *n);
    for (int i = 0; ok && i < *n; i++) {
        ok = rp_int64_arg(PySequence_Fast_GET_ITEM(seq, i), "argnums", 0, INT32_MAX, &v[i]);
        out[i] = (int)v[i];
    }
    Py_DECREF(seq);
    return ok;
}

static PyObject *transform(PyObject *args, const char *what,
                           remat_status (*t)(const remat_fn *, int, const int *, remat_fn **))
{
    PyObject *fo, *ao;
    int argnums[64], n;
    if (!PyArg_ParseTuple(args, "OO", &fo, &ao))
        return NULL;
    remat_fn *f = rp_fn_of(fo, what), *out = NULL;
    if (!f || !argnums_in(ao, argnums, &n))
        return NULL;
    remat_status st = t(f, n, argnums, &out);
    return st == REMAT_OK ? rp_wrap_fn(out) : rp_raise(st);
}

static PyObject *f_vjp(PyObject *m, PyObject *a) { return transform(a, "vjp", remat_vjp); }
static PyObject *f_grad(PyObject *m, PyObject *a) { return transform(a, "grad", remat_grad); }
static PyObject *f_value_and_grad(PyObject *m, PyObject *a) { return transform(a, "value_and_grad", remat_value_and_grad); }
static PyObject *f_jvp(PyObject *m, PyObject *a) { return transform(a, "jvp", remat_jvp); }
static PyObject *f_jacfwd(PyObject *m, PyObject *a) { return transform(a, "jacfwd", remat_jacfwd); }
static PyObject *f_hvp(PyObject *m, PyObject *a) { return transform(a, "hvp", remat_hvp); }

static PyObject *f_checkpoint(PyObject *m, PyObject *args)
{
    PyObject *fo, *po;
    if (!PyArg_ParseTuple(args, "OO:checkpoint", &fo, &po))
        return NULL;
    remat_fn *f = rp_fn_of(fo, "checkpoint");
    remat_policy *p;
    if (!f || !rp_policy_of(po, &p))
        return NULL;
    remat_fn *c = remat_checkpoint(f, p);
    remat_policy_free(p);
    if (!c)
        return rp_raise(remat_fn_status(f) != REMAT_OK ? remat_fn_status(f) : REMAT_ERR_ARG);
    return rp_wrap_fn(c);
}

/* ([(line, kind, bytes, name)], total bytes, the printed text) */
static PyObject *residual_list(remat_residual_list *r)
{
    static const char *kinds[] = {"argument", "output", "named", "snapshot"};
    int n = remat_residual_list_count(r);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        const remat_residual *e = remat_residual_list_get(r, i);
        char buf[1024];
        remat_residual_format(e, buf, sizeof buf);
        PyObject *t = Py_BuildValue("(ssnz)", buf, kinds[e->kind], (Py_ssize_t)e->bytes, e->name);
        if (!t) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, t);
    }
    char *buf = NULL; /* remat_residual_list_print's text, as it prints it */
    size_t len = 0;
    FILE *mem = l ? open_memstream(&buf, &len) : NULL;
    if (mem) {
        remat_residual_list_print(r, mem);
        fclose(mem);
    }
    PyObject *res = l && mem ? Py_BuildValue("(Nns#)", l, (Py_ssize_t)remat_residual_list_bytes(r), buf ? buf : "",
                                             (Py_ssize_t)len)
                             : NULL;
    if (l && !mem)
        PyErr_NoMemory();
    free(buf);
    remat_residual_list_free(r);
    return res;
}

static PyObject *f_saved_residuals(PyObject *m, PyObject *args)
{
    PyObject *fo, *ao;
    int argnums[64], n;
    if (!PyArg_ParseTuple(args, "OO:saved_residuals", &fo, &ao))
        return NULL;
    remat_fn *f = rp_fn_of(fo, "saved_residuals");
    if (!f || !argnums_in(ao, argnums, &n))
        return NULL;
    remat_residual_list *r = NULL;
    remat_status st = remat_saved_residuals(f, n, argnums, &r);
    return st == REMAT_OK ? residual_list(r) : rp_raise(st);
}

PyMethodDef rp_graph_transform_functions[] = {
    {"vjp", f_vjp, METH_VARARGS, NULL},
    {"grad", f_grad, METH_VARARGS, NULL},
    {"value_and_grad", f_value_and_grad, METH_VARARGS, NULL},
    {"jvp", f_jvp, METH_VARARGS, NULL},
    {"jacfwd", f_jacfwd, METH_VARARGS, NULL},
    {"hvp", f_hvp, METH_VARARGS, NULL},
    {"checkpoint", f_checkpoint, METH_VARARGS, NULL},
    {"saved_residuals", f_saved_residuals, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};
