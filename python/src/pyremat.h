/*
 * pyremat.h — what the files of the extension module remat._remat share.
 *
 * The module binds the public C API (include/remat/ headers) only: no header of
 * src/ is included here (python/tests/test_boundary.py checks it), so the
 * library's internals can change without touching the binding.
 */
#ifndef PYREMAT_H
#define PYREMAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyremat_ARRAY_API
#ifndef PYREMAT_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <remat/remat.h>

/* ---- errors (errors.c) ---- */

/* remat.Error and one subclass per remat_status (index: the status; the
 * REMAT_OK entry is NULL). */
extern PyObject *rp_error_base;
extern PyObject *rp_error_class[REMAT_STATUS_COUNT];
int rp_errors_init(PyObject *module);
/* Raises the class of st with remat_last_error() (the status's name when
 * remat left no message); returns NULL. */
PyObject *rp_raise(remat_status st);
/* Raises the class of st with a formatted message; returns NULL. */
PyObject *rp_raise_msg(remat_status st, const char *fmt, ...);

/* ---- arrays (arrays.c) ---- */

/* Borrowed view of a float64 input: an ndarray must already be float64,
 * C-contiguous and aligned (it is read in place, no copy); any other object
 * (a list, a scalar) is converted into a new float64 array (a copy). ndim
 * and shape[] (entries -1: any) are checked; finite = 1 refuses NaN and
 * infinities. The message names `what`. Returns a new reference, or NULL
 * with remat.DtypeError, remat.ShapeError or remat.BadValueError set. */
PyArrayObject *rp_f64_in(PyObject *obj, const char *what, int ndim, const npy_intp *shape, int finite);
/* A new C-contiguous float64 array of the shape (owns its memory). */
PyArrayObject *rp_f64_new(int ndim, const npy_intp *shape);
/* A Python int in [lo, hi] into *out; 0 with remat.ArgumentError naming what. */
int rp_int64_arg(PyObject *obj, const char *what, int64_t lo, int64_t hi, int64_t *out);

/* ---- types and functions of the other files ---- */

extern PyTypeObject rp_mechanism_type;
typedef struct {
    PyObject_HEAD
    remat_mechanism *m;
} rp_mechanism;
/* The mechanism of a remat._remat.Mechanism; NULL with remat.ArgumentError. */
remat_mechanism *rp_mechanism_of(PyObject *obj, const char *what);

int rp_mechanism_init(PyObject *module);
extern PyMethodDef rp_mechanism_functions[];
extern PyMethodDef rp_pfr_functions[];
int rp_pfr_init(PyObject *module);
extern PyMethodDef rp_fit_functions[];
/* graph.c: the types Fn and Program and the transforms and compile (graph.h) */
int rp_graph_init(PyObject *module);
extern PyMethodDef rp_nn_functions[];
int rp_nn_init(PyObject *module);
/* graph_scan.c's policies (None, a name, or (kind, names)) and functions, for nn.c */
int rp_policy_of(PyObject *spec, remat_policy **out);
PyObject *rp_wrap_fn(remat_fn *f);
remat_fn *rp_fn_of(PyObject *obj, const char *what);

#endif
