/* graph_args.c — the Fn builders' Python arguments (graph.h): the caller's
 * (file, line), dtype names, int lists, value handles in and out, and a
 * function's build error as an exception. */
#include "graph.h"

#include <stdint.h>
#include <string.h>

static PyObject *loc_files; /* file names kept alive: remat_loc points into them */

int rp_graph_args_init(void)
{
    return (loc_files = PyDict_New()) ? 0 : -1;
}

int rp_get_loc(PyObject *obj, remat_loc *loc)
{
    *loc = (remat_loc){"<python>", 0};
    if (obj == Py_None)
        return 1;
    PyObject *file;
    int line;
    if (!PyArg_ParseTuple(obj, "Ui:loc", &file, &line))
        return 0;
    PyObject *kept = PyDict_SetDefault(loc_files, file, file);
    if (!kept)
        return 0;
    loc->file = PyUnicode_AsUTF8(kept);
    loc->line = line;
    return loc->file != NULL;
}

int rp_get_dtype(const char *s, remat_dtype *dt)
{
    if (!strcmp(s, "float64") || !strcmp(s, "f64"))
        *dt = REMAT_F64;
    else if (!strcmp(s, "float32") || !strcmp(s, "f32"))
        *dt = REMAT_F32;
    else {
        rp_raise_msg(REMAT_ERR_DTYPE, "dtype '%s': remat has float32 and float64", s);
        return 0;
    }
    return 1;
}

/* A sequence of ints into out[<= REMAT_MAX_RANK]; returns the count or -1. */
int rp_ints64(PyObject *obj, const char *what, int64_t *out)
{
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > REMAT_MAX_RANK) {
        Py_DECREF(seq);
        rp_raise_msg(REMAT_ERR_SHAPE, "%s: %zd entries, remat arrays have at most %d dimensions", what, n,
                     REMAT_MAX_RANK);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!rp_int64_arg(PySequence_Fast_GET_ITEM(seq, i), what, INT64_MIN, INT64_MAX, &out[i])) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return (int)n;
}

int rp_ints32(PyObject *obj, const char *what, int *out)
{
    int64_t v[REMAT_MAX_RANK];
    int n = rp_ints64(obj, what, v);
    for (int i = 0; i < n; i++)
        out[i] = (int)v[i];
    return n;
}

/* A sequence of value handles (PyMem_Malloc'd array, *n its length). */
remat_val *rp_vals_in(PyObject *obj, const char *what, int *n)
{
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq)
        return NULL;
    *n = (int)PySequence_Fast_GET_SIZE(seq);
    remat_val *v = PyMem_Malloc(sizeof *v * (size_t)(*n + 1));
    for (int i = 0; v && i < *n; i++) {
        long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (x == -1 && PyErr_Occurred()) {
            PyMem_Free(v);
            v = NULL;
        } else {
            v[i] = (remat_val)x;
        }
    }
    Py_DECREF(seq);
    if (!v && !PyErr_Occurred())
        PyErr_NoMemory();
    return v;
}

PyObject *rp_vals_out(const remat_val *v, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* The build error the function recorded (cleared, so that the function can
 * go on), as an exception; NULL. */
PyObject *rp_build_error(remat_fn *f)
{
    remat_status st = remat_fn_status(f);
    if (st == REMAT_OK)
        return rp_raise(REMAT_ERR_ARG);
    PyObject *r = rp_raise_msg(st, "%s", remat_fn_error(f));
    remat_fn_clear_error(f);
    remat_clear_error();
    return r;
}

PyObject *rp_val_result(remat_fn *f, remat_val v)
{
    if (v == REMAT_NONE || remat_fn_status(f) != REMAT_OK)
        return rp_build_error(f);
    return PyLong_FromLong(v);
}
