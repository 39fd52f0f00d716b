/* graph_program.c — compile() and remat._remat.Program: a compiled
 * function (remat/exec.h) run on NumPy arrays, its memory plan and
 * signature. */
#include "graph.h"

#include <pythread.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    remat_program *p;
    PyThread_type_lock lock; /* a program runs on one thread at a time (remat/exec.h) */
} rp_program;

static void program_dealloc(PyObject *self)
{
    if (((rp_program *)self)->lock)
        PyThread_free_lock(((rp_program *)self)->lock);
    remat_program_free(((rp_program *)self)->p);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *f_compile(PyObject *m, PyObject *args)
{
    PyObject *fo;
    const char *jit = "auto";
    if (!PyArg_ParseTuple(args, "O|s:compile", &fo, &jit))
        return NULL;
    remat_fn *f = rp_fn_of(fo, "compile");
    if (!f)
        return NULL;
    remat_compile_options o;
    remat_status st = remat_compile_options_from_env(&o);
    if (st != REMAT_OK)
        return rp_raise(st);
    if (!strcmp(jit, "always"))
        o.jit = REMAT_JIT_ALWAYS;
    else if (!strcmp(jit, "never"))
        o.jit = REMAT_JIT_NEVER;
    else if (strcmp(jit, "auto"))
        return rp_raise_msg(REMAT_ERR_ARG, "jit '%s': expected auto, always or never", jit);
    remat_program *p = NULL;
    /* with the GIL: another thread may not add ops to f while it compiles */
    st = remat_compile_opts(f, NULL, &o, &p);
    if (st != REMAT_OK)
        return rp_raise(st);
    rp_program *obj = PyObject_New(rp_program, &rp_program_type);
    if (!obj) {
        remat_program_free(p);
        return NULL;
    }
    obj->p = p;
    obj->lock = PyThread_allocate_lock();
    if (!obj->lock) {
        Py_DECREF(obj);
        return PyErr_NoMemory();
    }
    return (PyObject *)obj;
}

static PyObject *desc_tuple(remat_tensor t)
{
    PyObject *s = PyTuple_New(t.shape.rank < 0 ? 0 : t.shape.rank);
    for (int i = 0; s && i < t.shape.rank; i++) {
        PyObject *x = PyLong_FromLongLong(t.shape.dims[i]);
        if (!x) {
            Py_CLEAR(s);
            break;
        }
        PyTuple_SET_ITEM(s, i, x);
    }
    return s ? Py_BuildValue("(sN)", t.dtype == REMAT_F64 ? "float64" : "float32", s) : NULL;
}

/* run(inputs) -> (outputs, stats): inputs read in place (the program's
 * dtype, C-contiguous), outputs new arrays the program writes. */
static PyObject *p_run(PyObject *self, PyObject *args)
{
    remat_program *p = ((rp_program *)self)->p;
    PyObject *io;
    if (!PyArg_ParseTuple(args, "O:run", &io))
        return NULL;
    PyObject *seq = PySequence_Fast(io, "run: inputs");
    if (!seq)
        return NULL;
    int ni = remat_program_num_inputs(p), no = remat_program_num_outputs(p);
    Py_ssize_t given = PySequence_Fast_GET_SIZE(seq);
    PyArrayObject **ins = PyMem_Calloc((size_t)ni + 1, sizeof *ins), **outs = PyMem_Calloc((size_t)no + 1, sizeof *outs);
    remat_tensor *ti = PyMem_Calloc((size_t)ni + 1, sizeof *ti), *to = PyMem_Calloc((size_t)no + 1, sizeof *to);
    PyObject *res = NULL;
    if (!ins || !outs || !ti || !to) {
        PyErr_NoMemory();
        goto done;
    }
    if (given != ni) {
        rp_raise_msg(REMAT_ERR_ARG, "run: %zd inputs given, the function takes %d", given, ni);
        goto done;
    }
    for (int i = 0; i < ni; i++) {
        remat_tensor d = remat_program_input_desc(p, i);
        npy_intp shape[REMAT_MAX_RANK];
        for (int k = 0; k < d.shape.rank; k++)
            shape[k] = d.shape.dims[k];
        char what[48];
        snprintf(what, sizeof what, "input %d", i);
        PyObject *x = PySequence_Fast_GET_ITEM(seq, i);
        if (d.dtype == REMAT_F64) {
            ins[i] = rp_f64_in(x, what, d.shape.rank, shape, 0);
        } else if (PyArray_Check(x) && PyArray_TYPE((PyArrayObject *)x) == NPY_FLOAT &&
                   PyArray_IS_C_CONTIGUOUS((PyArrayObject *)x) && PyArray_ISALIGNED((PyArrayObject *)x)) {
            Py_INCREF(x);
            ins[i] = (PyArrayObject *)x;
        } else if (!PyArray_Check(x)) {
            ins[i] = (PyArrayObject *)PyArray_FROMANY(x, NPY_FLOAT, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
        } else {
            rp_raise_msg(REMAT_ERR_DTYPE, "%s: expected a C-contiguous float32 array", what);
        }
        if (!ins[i])
            goto done;
        if (PyArray_NDIM(ins[i]) != d.shape.rank || memcmp(PyArray_DIMS(ins[i]), shape, sizeof(npy_intp) * (size_t)d.shape.rank)) {
            rp_raise_msg(REMAT_ERR_SHAPE, "%s: shape does not match the argument's", what);
            goto done;
        }
        ti[i] = d;
        ti[i].data = PyArray_DATA(ins[i]);
    }
    for (int i = 0; i < no; i++) {
        remat_tensor d = remat_program_output_desc(p, i);
        npy_intp shape[REMAT_MAX_RANK];
        for (int k = 0; k < d.shape.rank; k++)
            shape[k] = d.shape.dims[k];
        outs[i] = (PyArrayObject *)PyArray_ZEROS(d.shape.rank, shape, d.dtype == REMAT_F64 ? NPY_DOUBLE : NPY_FLOAT, 0);
        if (!outs[i])
            goto done;
        to[i] = d;
        to[i].data = PyArray_DATA(outs[i]);
    }
    remat_stats stats;
    remat_status st;
    PyThread_type_lock lock = ((rp_program *)self)->lock;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(lock, WAIT_LOCK);
    st = remat_run(p, ni, ti, no, to, &stats);
    PyThread_release_lock(lock);
    Py_END_ALLOW_THREADS
    if (st != REMAT_OK) {
        rp_raise(st);
        goto done;
    }
    PyObject *ol = PyTuple_New(no);
    for (int i = 0; ol && i < no; i++) {
        PyTuple_SET_ITEM(ol, i, (PyObject *)outs[i]);
        outs[i] = NULL;
    }
    if (ol)
        res = Py_BuildValue("(N{s:n,s:n,s:n,s:L,s:L,s:L,s:d,s:n})", ol, "peak_arena_bytes",
                            (Py_ssize_t)stats.peak_arena_bytes, "residual_bytes", (Py_ssize_t)stats.residual_bytes,
                            "peak_snapshot_bytes", (Py_ssize_t)stats.peak_snapshot_bytes, "ops_executed",
                            (long long)stats.ops_executed, "recomputed_ops", (long long)stats.recomputed_ops,
                            "forward_evals", (long long)stats.forward_evals, "seconds", stats.seconds,
                            "offload_bytes", (Py_ssize_t)stats.offload_bytes);
done:
    for (int i = 0; ins && i < ni; i++)
        Py_XDECREF(ins[i]);
    for (int i = 0; outs && i < no; i++)
        Py_XDECREF(outs[i]);
    PyMem_Free(ins);
    PyMem_Free(outs);
    PyMem_Free(ti);
    PyMem_Free(to);
    Py_DECREF(seq);
    return res;
}

static PyObject *p_plan(PyObject *self, PyObject *unused)
{
    remat_memory_plan pl = {0};
    remat_program_plan(((rp_program *)self)->p, &pl);
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:L,s:L,s:n,s:L,s:n,s:L,s:n}", "arena_bytes", (Py_ssize_t)pl.arena_bytes,
                         "residual_bytes", (Py_ssize_t)pl.residual_bytes, "residual_arg_bytes",
                         (Py_ssize_t)pl.residual_arg_bytes, "constant_bytes", (Py_ssize_t)pl.constant_bytes,
                         "instructions", (long long)pl.instructions, "recompute_instructions",
                         (long long)pl.recompute_instructions, "peak_snapshot_bytes",
                         (Py_ssize_t)pl.peak_snapshot_bytes, "forward_evals", (long long)pl.forward_evals,
                         "tier_bytes", (Py_ssize_t)pl.tier_bytes, "unrolled_loops", (long long)pl.unrolled_loops,
                         "offload_bytes", (Py_ssize_t)pl.offload_bytes);
}

static PyObject *p_signature(PyObject *self, PyObject *unused)
{
    remat_program *p = ((rp_program *)self)->p;
    int ni = remat_program_num_inputs(p), no = remat_program_num_outputs(p);
    PyObject *i_l = PyList_New(ni), *o_l = PyList_New(no);
    for (int i = 0; i_l && o_l && i < ni; i++) {
        PyObject *t = desc_tuple(remat_program_input_desc(p, i));
        if (!t)
            goto fail;
        PyList_SET_ITEM(i_l, i, t);
    }
    for (int i = 0; i_l && o_l && i < no; i++) {
        PyObject *t = desc_tuple(remat_program_output_desc(p, i));
        if (!t)
            goto fail;
        PyList_SET_ITEM(o_l, i, t);
    }
    if (i_l && o_l)
        return Py_BuildValue("(NN)", i_l, o_l);
fail:
    Py_XDECREF(i_l);
    Py_XDECREF(o_l);
    return NULL;
}

static PyMethodDef program_methods[] = {
    {"run", p_run, METH_VARARGS, "run(inputs) -> (outputs, stats)"},
    {"plan", p_plan, METH_NOARGS, "The static memory plan (remat_memory_plan)."},
    {"signature", p_signature, METH_NOARGS, "([(dtype, shape)] inputs, [(dtype, shape)] outputs)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject rp_program_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._remat.Program",
    .tp_basicsize = sizeof(rp_program),
    .tp_dealloc = program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled function (remat/exec.h); made by compile().",
    .tp_methods = program_methods,
};

PyMethodDef rp_graph_program_functions[] = {
    {"compile", f_compile, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};
