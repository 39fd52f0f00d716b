/* mechanism.c — remat._remat.Mechanism: a parsed mechanism (remat/mechanism.h)
 * owned by a Python object; remat.Mechanism (remat/kinetics.py) wraps it. */
#include "pyremat.h"

#include <stdlib.h>

static void mech_dealloc(PyObject *self)
{
    remat_mechanism_free(((rp_mechanism *)self)->m);
    Py_TYPE(self)->tp_free(self);
}

remat_mechanism *rp_mechanism_of(PyObject *obj, const char *what)
{
    if (!PyObject_TypeCheck(obj, &rp_mechanism_type)) {
        rp_raise_msg(REMAT_ERR_ARG, "%s: expected a remat.Mechanism, got %s", what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((rp_mechanism *)obj)->m;
}

static PyObject *wrap(remat_mechanism *m)
{
    rp_mechanism *o = PyObject_New(rp_mechanism, &rp_mechanism_type);
    if (!o) {
        remat_mechanism_free(m);
        return NULL;
    }
    o->m = m;
    return (PyObject *)o;
}

static PyObject *parse_file(PyObject *mod, PyObject *arg)
{
    PyObject *bytes;
    if (!PyUnicode_FSConverter(arg, &bytes))
        return NULL;
    remat_mechanism *m = NULL;
    remat_status st;
    Py_BEGIN_ALLOW_THREADS
    st = remat_mechanism_parse_file(PyBytes_AS_STRING(bytes), &m);
    Py_END_ALLOW_THREADS
    Py_DECREF(bytes);
    return st == REMAT_OK ? wrap(m) : rp_raise(st);
}

static PyObject *parse_string(PyObject *mod, PyObject *args)
{
    const char *text, *name = NULL;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#|z:parse_string", &text, &len, &name))
        return NULL;
    if ((size_t)len != strlen(text))
        return rp_raise_msg(REMAT_ERR_PARSE, "%s: the text holds a NUL character", name ? name : "<string>");
    remat_mechanism *m = NULL;
    remat_status st = remat_mechanism_parse_string(text, name, &m);
    return st == REMAT_OK ? wrap(m) : rp_raise(st);
}

static PyObject *expr_text(const remat_expr *e)
{
    int n = remat_expr_format(e, NULL, 0);
    if (n < 0)
        return rp_raise(REMAT_ERR_NULL);
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        return PyErr_NoMemory();
    remat_expr_format(e, buf, n + 1);
    PyObject *s = PyUnicode_FromString(buf);
    free(buf);
    return s;
}

/* Everything a Python caller reads as collections, in one dict. */
static PyObject *mech_info(PyObject *self, PyObject *unused)
{
    const remat_mechanism *m = ((rp_mechanism *)self)->m;
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    int C = remat_mechanism_const_count(m), L = remat_mechanism_let_count(m);
    int R = remat_mechanism_reaction_count(m);
    PyObject *species = PyList_New(S), *params = PyList_New(P), *consts = PyList_New(C), *lets = PyList_New(L);
    PyObject *rhs = PyList_New(S), *reactions = PyList_New(R), *d = NULL;
    if (!species || !params || !consts || !lets || !rhs || !reactions)
        goto done;
    for (int i = 0; i < S; i++) {
        PyObject *n = PyUnicode_FromString(remat_mechanism_species_name(m, i)), *t = expr_text(remat_mechanism_rhs(m, i));
        if (!n || !t) {
            Py_XDECREF(n);
            Py_XDECREF(t);
            goto done;
        }
        PyList_SET_ITEM(species, i, n);
        PyList_SET_ITEM(rhs, i, t);
    }
    for (int i = 0; i < P; i++) {
        PyObject *t = Py_BuildValue("(sddd)", remat_mechanism_param_name(m, i), remat_mechanism_param_value(m, i),
                                    remat_mechanism_param_lo(m, i), remat_mechanism_param_hi(m, i));
        if (!t)
            goto done;
        PyList_SET_ITEM(params, i, t);
    }
    for (int i = 0; i < C; i++) {
        PyObject *t = Py_BuildValue("(sd)", remat_mechanism_const_name(m, i), remat_mechanism_const_value(m, i));
        if (!t)
            goto done;
        PyList_SET_ITEM(consts, i, t);
    }
    for (int i = 0; i < L; i++) {
        PyObject *e = expr_text(remat_mechanism_let_expr(m, i));
        PyObject *t = e ? Py_BuildValue("(sN)", remat_mechanism_let_name(m, i), e) : NULL;
        if (!t)
            goto done;
        PyList_SET_ITEM(lets, i, t);
    }
    for (int r = 0; r < R; r++) {
        PyObject *st = PyDict_New(), *e = expr_text(remat_mechanism_reaction_rate(m, r));
        for (int s = 0; st && e && s < S; s++) {
            double c = remat_mechanism_reaction_stoich(m, r, s);
            if (c == 0)
                continue;
            PyObject *v = PyFloat_FromDouble(c);
            if (!v || PyDict_SetItemString(st, remat_mechanism_species_name(m, s), v) < 0)
                Py_CLEAR(st);
            Py_XDECREF(v);
        }
        PyObject *t = st && e ? Py_BuildValue("(NNi)", e, st, remat_mechanism_reaction_line(m, r)) : NULL;
        if (!t) {
            Py_XDECREF(st);
            Py_XDECREF(e);
            goto done;
        }
        PyList_SET_ITEM(reactions, r, t);
    }
    d = Py_BuildValue("{s:s,s:s,s:O,s:O,s:O,s:O,s:O,s:O,s:i}", "source", remat_mechanism_source(m), "indep",
                      remat_mechanism_indep_name(m), "species", species, "params", params, "consts", consts, "lets",
                      lets, "rhs", rhs, "reactions", reactions, "uses_indep", remat_kinetics_uses_indep(m));
done:
    Py_XDECREF(species);
    Py_XDECREF(params);
    Py_XDECREF(consts);
    Py_XDECREF(lets);
    Py_XDECREF(rhs);
    Py_XDECREF(reactions);
    return d;
}

/* dy/dt at (t, y, params): the double reference evaluator. */
static PyObject *mech_eval_rhs(PyObject *self, PyObject *args)
{
    const remat_mechanism *m = ((rp_mechanism *)self)->m;
    double t;
    PyObject *yo, *po;
    if (!PyArg_ParseTuple(args, "dOO:eval_rhs", &t, &yo, &po))
        return NULL;
    npy_intp S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    PyArrayObject *y = rp_f64_in(yo, "eval_rhs: y", 1, &S, 0), *p = y ? rp_f64_in(po, "eval_rhs: params", 1, &P, 0) : NULL;
    PyArrayObject *out = p ? rp_f64_new(1, &S) : NULL;
    PyObject *res = NULL;
    if (out) {
        remat_status st = remat_mechanism_eval_rhs(m, t, PyArray_DATA(y), PyArray_DATA(p), PyArray_DATA(out));
        if (st == REMAT_OK)
            res = (PyObject *)out, out = NULL;
        else
            rp_raise(st);
    }
    Py_XDECREF(y);
    Py_XDECREF(p);
    Py_XDECREF(out);
    return res;
}

static PyMethodDef mech_methods[] = {
    {"info", mech_info, METH_NOARGS, "Species, parameters, constants, lets and reactions as one dict."},
    {"eval_rhs", mech_eval_rhs, METH_VARARGS, "eval_rhs(t, y, params) -> dy/dt (float64 array)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject rp_mechanism_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._remat.Mechanism",
    .tp_basicsize = sizeof(rp_mechanism),
    .tp_dealloc = mech_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A parsed mechanism (remat/mechanism.h); made by parse_file or parse_string.",
    .tp_methods = mech_methods,
};

PyMethodDef rp_mechanism_functions[] = {
    {"parse_file", parse_file, METH_O, "parse_file(path) -> Mechanism (remat_mechanism_parse_file)."},
    {"parse_string", parse_string, METH_VARARGS,
     "parse_string(text, name=None) -> Mechanism (remat_mechanism_parse_string)."},
    {NULL, NULL, 0, NULL},
};

int rp_mechanism_init(PyObject *module)
{
    if (PyType_Ready(&rp_mechanism_type) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Mechanism", (PyObject *)&rp_mechanism_type);
}
