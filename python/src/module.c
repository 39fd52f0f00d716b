/* module.c — the extension module remat._remat: its functions and types,
 * gathered from the other files of python/src. */
#define PYREMAT_MODULE_C
#include "pyremat.h"

static PyObject *status_name(PyObject *mod, PyObject *arg)
{
    long st = PyLong_AsLong(arg);
    if (st == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(remat_status_name((remat_status)st));
}

static PyMethodDef base_functions[] = {
    {"status_name", status_name, METH_O, "The short text of a remat_status number."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, .m_name = "remat._remat",
    .m_doc = "remat's C library (include/remat/*.h) for Python; use the package remat, not this module.",
    .m_size = -1,
};

static int add_functions(PyObject *module, PyMethodDef *defs)
{
    return PyModule_AddFunctions(module, defs);
}

PyMODINIT_FUNC PyInit__remat(void);
PyMODINIT_FUNC PyInit__remat(void)
{
    import_array();
    PyObject *module = PyModule_Create(&moduledef);
    if (!module)
        return NULL;
    if (rp_errors_init(module) < 0 || rp_mechanism_init(module) < 0 || rp_pfr_init(module) < 0 || add_functions(module, base_functions) < 0 ||
        add_functions(module, rp_mechanism_functions) < 0 || add_functions(module, rp_pfr_functions) < 0 ||
        add_functions(module, rp_fit_functions) < 0 || rp_graph_init(module) < 0 ||
        rp_nn_init(module) < 0 ||
        add_functions(module, rp_nn_functions) < 0 ||
        PyModule_AddIntConstant(module, "STATUS_COUNT", REMAT_STATUS_COUNT) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
