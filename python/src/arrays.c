/* arrays.c — NumPy arrays in and out (pyremat.h): inputs read in place when
 * they are float64, C-contiguous and aligned, refused with a remat exception
 * when they are arrays of another dtype or layout; lists and scalars are
 * converted (a copy: they are small by nature). */
#include "pyremat.h"

#include <math.h>

static int check_shape(PyArrayObject *a, const char *what, int ndim, const npy_intp *shape)
{
    if (ndim < 0)
        return 1;
    if (PyArray_NDIM(a) != ndim) {
        rp_raise_msg(REMAT_ERR_SHAPE, "%s: expected %d dimension%s, got an array of %d", what, ndim,
                     ndim == 1 ? "" : "s", PyArray_NDIM(a));
        return 0;
    }
    for (int i = 0; shape && i < ndim; i++)
        if (shape[i] >= 0 && PyArray_DIM(a, i) != shape[i]) {
            rp_raise_msg(REMAT_ERR_SHAPE, "%s: axis %d has %zd entries, expected %zd", what, i,
                         (Py_ssize_t)PyArray_DIM(a, i), (Py_ssize_t)shape[i]);
            return 0;
        }
    return 1;
}

static int check_finite(PyArrayObject *a, const char *what)
{
    const double *d = PyArray_DATA(a);
    npy_intp n = PyArray_SIZE(a);
    for (npy_intp i = 0; i < n; i++)
        if (!isfinite(d[i])) {
            rp_raise_msg(REMAT_ERR_VALUE, "%s: entry %zd is %s; a finite number is required", what,
                         (Py_ssize_t)i, isnan(d[i]) ? "NaN" : "infinite");
            return 0;
        }
    return 1;
}

PyArrayObject *rp_f64_in(PyObject *obj, const char *what, int ndim, const npy_intp *shape, int finite)
{
    PyArrayObject *a;
    if (obj == NULL || obj == Py_None) {
        rp_raise_msg(REMAT_ERR_NULL, "%s: an array is required, got None", what);
        return NULL;
    }
    if (PyArray_Check(obj)) {
        a = (PyArrayObject *)obj;
        if (PyArray_TYPE(a) != NPY_DOUBLE || !PyArray_ISNBO(PyArray_DESCR(a)->byteorder)) {
            PyObject *d = PyObject_Str((PyObject *)PyArray_DESCR(a));
            rp_raise_msg(REMAT_ERR_DTYPE, "%s: expected a float64 array, got dtype %S (convert it with .astype(np.float64))",
                         what, d ? d : Py_None);
            Py_XDECREF(d);
            return NULL;
        }
        if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a)) {
            rp_raise_msg(REMAT_ERR_SHAPE,
                         "%s: the array is not C-contiguous (a slice or a transpose); remat reads arrays in place: "
                         "pass np.ascontiguousarray(...)",
                         what);
            return NULL;
        }
        Py_INCREF(a);
    } else {
        a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_DOUBLE, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
        if (!a) {
            PyObject *t, *v, *tb;
            PyErr_Fetch(&t, &v, &tb);
            PyErr_NormalizeException(&t, &v, &tb);
            rp_raise_msg(REMAT_ERR_DTYPE, "%s: cannot be read as float64 numbers (%S)", what, v ? v : Py_None);
            Py_XDECREF(t);
            Py_XDECREF(v);
            Py_XDECREF(tb);
            return NULL;
        }
    }
    if (!check_shape(a, what, ndim, shape) || (finite && !check_finite(a, what))) {
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

PyArrayObject *rp_f64_new(int ndim, const npy_intp *shape)
{
    return (PyArrayObject *)PyArray_ZEROS(ndim, (npy_intp *)shape, NPY_DOUBLE, 0);
}

int rp_int64_arg(PyObject *obj, const char *what, int64_t lo, int64_t hi, int64_t *out)
{
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        rp_raise_msg(REMAT_ERR_ARG, "%s: expected an int, got %s", what, Py_TYPE(obj)->tp_name);
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred())
        return 0;
    if (overflow || v < lo || v > hi) {
        rp_raise_msg(REMAT_ERR_ARG, "%s: %S is out of range [%lld, %lld]", what, obj, (long long)lo, (long long)hi);
        return 0;
    }
    *out = v;
    return 1;
}
