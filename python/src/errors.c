/* errors.c — remat_status as Python exceptions: remat.Error and one subclass
 * per status, each also a subclass of the built-in exception it means
 * (remat.ShapeError is a ValueError, remat.FileError an OSError, ...), so
 * that code catching the built-ins keeps working. */
#define PYREMAT_ERRORS_C
#include "pyremat.h"

#include <stdarg.h>

PyObject *rp_error_base;
PyObject *rp_error_class[REMAT_STATUS_COUNT];

static const struct {
    remat_status st;
    const char *name;
    PyObject **builtin;
    const char *doc;
} classes[] = {
    {REMAT_ERR_NULL, "NullError", &PyExc_TypeError, "A required argument is missing (REMAT_ERR_NULL)."},
    {REMAT_ERR_SHAPE, "ShapeError", &PyExc_ValueError,
     "An array's shape or layout does not fit (REMAT_ERR_SHAPE)."},
    {REMAT_ERR_DTYPE, "DtypeError", &PyExc_TypeError, "An array's dtype does not fit (REMAT_ERR_DTYPE)."},
    {REMAT_ERR_AXIS, "AxisError", &PyExc_ValueError, "A bad axis (REMAT_ERR_AXIS)."},
    {REMAT_ERR_ARG, "ArgumentError", &PyExc_ValueError, "A bad argument (REMAT_ERR_ARG)."},
    {REMAT_ERR_VALUE, "BadValueError", &PyExc_ValueError,
     "A value out of its range, or NaN where none is allowed (REMAT_ERR_VALUE)."},
    {REMAT_ERR_NOMEM, "NoMemoryError", &PyExc_MemoryError, "Out of memory (REMAT_ERR_NOMEM)."},
    {REMAT_ERR_IO, "FileError", &PyExc_OSError, "A file cannot be read or written (REMAT_ERR_IO)."},
    {REMAT_ERR_PARSE, "ParseError", &PyExc_ValueError,
     "A mechanism or data file does not parse; the message gives file:line:column (REMAT_ERR_PARSE)."},
    {REMAT_ERR_UNSUPPORTED, "UnsupportedError", &PyExc_NotImplementedError,
     "Not supported (REMAT_ERR_UNSUPPORTED)."},
    {REMAT_ERR_BUDGET, "BudgetError", &PyExc_MemoryError,
     "No schedule fits the memory budget (REMAT_ERR_BUDGET)."},
    {REMAT_ERR_NUMERIC, "NumericError", &PyExc_ArithmeticError,
     "A computation gave NaN or infinity (REMAT_ERR_NUMERIC)."},
    {REMAT_ERR_BACKEND, "BackendError", &PyExc_RuntimeError, "The backend failed (REMAT_ERR_BACKEND)."},
};

int rp_errors_init(PyObject *module)
{
    rp_error_base = PyErr_NewExceptionWithDoc(
        "remat.Error", "Base class of every error remat reports; .status is the remat_status number.", NULL, NULL);
    if (!rp_error_base || PyModule_AddObjectRef(module, "Error", rp_error_base) < 0)
        return -1;
    int n = (int)(sizeof classes / sizeof classes[0]);
    if (n != REMAT_STATUS_COUNT - 1) {
        PyErr_SetString(PyExc_SystemError, "remat._remat: remat_status has a status without an exception class");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char qual[64];
        snprintf(qual, sizeof qual, "remat.%s", classes[i].name);
        PyObject *bases = PyTuple_Pack(2, rp_error_base, *classes[i].builtin);
        PyObject *dict = Py_BuildValue("{s:i,s:s}", "status", (int)classes[i].st, "status_name",
                                       remat_status_name(classes[i].st));
        PyObject *cls = bases && dict ? PyErr_NewExceptionWithDoc(qual, classes[i].doc, bases, dict) : NULL;
        Py_XDECREF(bases);
        Py_XDECREF(dict);
        if (!cls || PyModule_AddObjectRef(module, classes[i].name, cls) < 0)
            return -1;
        rp_error_class[classes[i].st] = cls;
    }
    return 0;
}

static PyObject *class_of(remat_status st)
{
    if ((int)st <= 0 || st >= REMAT_STATUS_COUNT || !rp_error_class[st])
        return rp_error_base;
    return rp_error_class[st];
}

PyObject *rp_raise(remat_status st)
{
    const char *msg = remat_last_error();
    PyErr_SetString(class_of(st), msg && *msg ? msg : remat_status_name(st));
    remat_clear_error();
    return NULL;
}

PyObject *rp_raise_msg(remat_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg) {
        PyErr_SetObject(class_of(st), msg);
        Py_DECREF(msg);
    }
    return NULL;
}
