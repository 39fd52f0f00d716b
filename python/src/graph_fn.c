/* graph_fn.c — remat._remat.Fn: the graph builder (remat/graph.h), one
 * method per constructor (scan: graph_scan.c), and what a function says of
 * itself (aval, info, text). Values are the C handles (ints); remat/graph.py
 * gives them operators and jax.numpy's names. Every builder takes the
 * caller's (file, line) first: reports and errors name the Python source, as
 * they name the C source in C. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PyObject *rp_wrap_fn(remat_fn *f)
{
    if (!f)
        return rp_raise(REMAT_ERR_NOMEM);
    rp_fn *o = PyObject_New(rp_fn, &rp_fn_type);
    if (!o) {
        remat_fn_free(f);
        return NULL;
    }
    o->f = f;
    return (PyObject *)o;
}

remat_fn *rp_fn_of(PyObject *obj, const char *what)
{
    if (!PyObject_TypeCheck(obj, &rp_fn_type)) {
        rp_raise_msg(REMAT_ERR_ARG, "%s: expected a remat.Fn, got %s", what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((rp_fn *)obj)->f;
}

static PyObject *fn_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    const char *name = "fn";
    static char *kws[] = {"name", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|s:Fn", kws, &name))
        return NULL;
    return rp_wrap_fn(remat_fn_new(name));
}

static void fn_dealloc(PyObject *self)
{
    remat_fn_free(((rp_fn *)self)->f);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *m_arg(PyObject *self, PyObject *args)
{
    PyObject *lo, *shape;
    const char *name, *dts;
    remat_loc loc;
    remat_dtype dt;
    int64_t dims[REMAT_MAX_RANK];
    if (!PyArg_ParseTuple(args, "OssO:arg", &lo, &name, &dts, &shape) || !rp_get_loc(lo, &loc) || !rp_get_dtype(dts, &dt))
        return NULL;
    int rank = rp_ints64(shape, "shape", dims);
    if (rank < 0)
        return NULL;
    return rp_val_result(FN(self), remat_arg_at(FN(self), name, dt, rank, dims, loc));
}

static PyObject *m_const(PyObject *self, PyObject *args)
{
    PyObject *lo, *arr;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OO:const", &lo, &arr) || !rp_get_loc(lo, &loc))
        return NULL;
    if (!PyArray_Check(arr) || (PyArray_TYPE((PyArrayObject *)arr) != NPY_DOUBLE &&
                                PyArray_TYPE((PyArrayObject *)arr) != NPY_FLOAT))
        return rp_raise_msg(REMAT_ERR_DTYPE, "constant: expected a float32 or float64 array");
    PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OF(arr, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (!a)
        return NULL;
    if (PyArray_NDIM(a) > REMAT_MAX_RANK) {
        Py_DECREF(a);
        return rp_raise_msg(REMAT_ERR_SHAPE, "constant: %d dimensions, at most %d", PyArray_NDIM(a), REMAT_MAX_RANK);
    }
    int64_t dims[REMAT_MAX_RANK];
    for (int i = 0; i < PyArray_NDIM(a); i++)
        dims[i] = PyArray_DIM(a, i);
    remat_dtype dt = PyArray_TYPE(a) == NPY_DOUBLE ? REMAT_F64 : REMAT_F32;
    remat_val v = remat_const_data_at(FN(self), dt, PyArray_NDIM(a), dims, PyArray_DATA(a), loc);
    Py_DECREF(a);
    return rp_val_result(FN(self), v);
}

static PyObject *m_fill(PyObject *self, PyObject *args)
{
    PyObject *lo, *shape;
    const char *dts;
    double value;
    remat_loc loc;
    remat_dtype dt;
    int64_t dims[REMAT_MAX_RANK];
    if (!PyArg_ParseTuple(args, "OsOd:fill", &lo, &dts, &shape, &value) || !rp_get_loc(lo, &loc) || !rp_get_dtype(dts, &dt))
        return NULL;
    int rank = rp_ints64(shape, "shape", dims);
    if (rank < 0)
        return NULL;
    return rp_val_result(FN(self), remat_const_fill_at(FN(self), dt, rank, dims, value, loc));
}

static int op_by_name(const char *name, remat_op *op)
{
    for (int i = 0; i < REMAT_OP_COUNT; i++)
        if (!strcmp(remat_op_name((remat_op)i), name)) {
            *op = (remat_op)i;
            return 1;
        }
    rp_raise_msg(REMAT_ERR_ARG, "no primitive named '%s'", name);
    return 0;
}

static PyObject *m_unary(PyObject *self, PyObject *args)
{
    PyObject *lo;
    const char *name;
    int a;
    remat_loc loc;
    remat_op op;
    if (!PyArg_ParseTuple(args, "Osi:unary", &lo, &name, &a) || !rp_get_loc(lo, &loc) || !op_by_name(name, &op))
        return NULL;
    return rp_val_result(FN(self), remat_unary_at(FN(self), op, a, loc));
}

static PyObject *m_binary(PyObject *self, PyObject *args)
{
    PyObject *lo;
    const char *name;
    int a, b;
    remat_loc loc;
    remat_op op;
    if (!PyArg_ParseTuple(args, "Osii:binary", &lo, &name, &a, &b) || !rp_get_loc(lo, &loc) || !op_by_name(name, &op))
        return NULL;
    return rp_val_result(FN(self), remat_binary_at(FN(self), op, a, b, loc));
}

static PyObject *m_binary_scalar(PyObject *self, PyObject *args)
{
    PyObject *lo;
    const char *name;
    int a;
    double s;
    remat_loc loc;
    remat_op op;
    if (!PyArg_ParseTuple(args, "Osid:binary_scalar", &lo, &name, &a, &s) || !rp_get_loc(lo, &loc) ||
        !op_by_name(name, &op))
        return NULL;
    return rp_val_result(FN(self), remat_binary_scalar_at(FN(self), op, a, s, loc));
}

static PyObject *m_integer_pow(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a, k;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oii:integer_pow", &lo, &a, &k) || !rp_get_loc(lo, &loc))
        return NULL;
    return rp_val_result(FN(self), remat_integer_pow_at(FN(self), a, k, loc));
}

static PyObject *m_pow(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    double p;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oid:pow", &lo, &a, &p) || !rp_get_loc(lo, &loc))
        return NULL;
    return rp_val_result(FN(self), remat_pow_at(FN(self), a, p, loc));
}

static PyObject *m_select(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int p, t, e;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oiii:select", &lo, &p, &t, &e) || !rp_get_loc(lo, &loc))
        return NULL;
    return rp_val_result(FN(self), remat_select_at(FN(self), p, t, e, loc));
}

static PyObject *m_convert(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    const char *dts;
    remat_loc loc;
    remat_dtype dt;
    if (!PyArg_ParseTuple(args, "Ois:convert", &lo, &a, &dts) || !rp_get_loc(lo, &loc) || !rp_get_dtype(dts, &dt))
        return NULL;
    return rp_val_result(FN(self), remat_convert_at(FN(self), a, dt, loc));
}

/* sum / reduce_max over axes (None: all) */
static PyObject *reduce(PyObject *self, PyObject *args, int max)
{
    PyObject *lo, *axes_obj;
    int a, axes[REMAT_MAX_RANK], n = -1;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OiO:reduce", &lo, &a, &axes_obj) || !rp_get_loc(lo, &loc))
        return NULL;
    if (axes_obj != Py_None && (n = rp_ints32(axes_obj, "axis", axes)) < 0)
        return NULL;
    remat_val v;
    if (n < 0) {
        remat_shape s = remat_val_shape(FN(self), a);
        n = s.rank < 0 ? 0 : s.rank;
        for (int i = 0; i < n; i++)
            axes[i] = i;
    }
    v = max ? remat_reduce_max_at(FN(self), a, n, axes, loc) : remat_sum_at(FN(self), a, n, axes, loc);
    return rp_val_result(FN(self), v);
}

static PyObject *m_sum(PyObject *self, PyObject *args)
{
    return reduce(self, args, 0);
}

static PyObject *m_reduce_max(PyObject *self, PyObject *args)
{
    return reduce(self, args, 1);
}

static PyObject *m_reshape(PyObject *self, PyObject *args)
{
    PyObject *lo, *shape;
    int a, bcast = 0;
    remat_loc loc;
    int64_t dims[REMAT_MAX_RANK];
    if (!PyArg_ParseTuple(args, "OiO|p:reshape", &lo, &a, &shape, &bcast) || !rp_get_loc(lo, &loc))
        return NULL;
    int rank = rp_ints64(shape, "shape", dims);
    if (rank < 0)
        return NULL;
    return rp_val_result(FN(self), bcast ? remat_broadcast_to_at(FN(self), a, rank, dims, loc)
                                      : remat_reshape_at(FN(self), a, rank, dims, loc));
}

static PyObject *m_broadcast_in_dim(PyObject *self, PyObject *args)
{
    PyObject *lo, *shape, *bd;
    int a, bdims[REMAT_MAX_RANK];
    remat_loc loc;
    int64_t dims[REMAT_MAX_RANK];
    if (!PyArg_ParseTuple(args, "OiOO:broadcast_in_dim", &lo, &a, &shape, &bd) || !rp_get_loc(lo, &loc))
        return NULL;
    int rank = rp_ints64(shape, "shape", dims);
    if (rank < 0 || rp_ints32(bd, "broadcast_dimensions", bdims) < 0)
        return NULL;
    return rp_val_result(FN(self), remat_broadcast_in_dim_at(FN(self), a, rank, dims, bdims, loc));
}

static PyObject *m_transpose(PyObject *self, PyObject *args)
{
    PyObject *lo, *perm_obj;
    int a, perm[REMAT_MAX_RANK];
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OiO:transpose", &lo, &a, &perm_obj) || !rp_get_loc(lo, &loc))
        return NULL;
    int n = rp_ints32(perm_obj, "permutation", perm);
    if (n < 0)
        return NULL;
    remat_shape s = remat_val_shape(FN(self), a);
    if (s.rank >= 0 && n != s.rank)
        return rp_raise_msg(REMAT_ERR_AXIS, "transpose: a permutation of %d axes for a value of %d", n, s.rank);
    return rp_val_result(FN(self), remat_transpose_at(FN(self), a, perm, loc));
}

static PyObject *m_slice(PyObject *self, PyObject *args)
{
    PyObject *lo, *so, *lim, *st = Py_None;
    int a;
    remat_loc loc;
    int64_t start[REMAT_MAX_RANK], limit[REMAT_MAX_RANK], stride[REMAT_MAX_RANK];
    if (!PyArg_ParseTuple(args, "OiOO|O:slice", &lo, &a, &so, &lim, &st) || !rp_get_loc(lo, &loc))
        return NULL;
    int n = rp_ints64(so, "start", start), m = n < 0 ? -1 : rp_ints64(lim, "limit", limit);
    if (m < 0 || (st != Py_None && rp_ints64(st, "strides", stride) < 0))
        return NULL;
    remat_shape s = remat_val_shape(FN(self), a);
    if (s.rank >= 0 && (n != s.rank || m != s.rank))
        return rp_raise_msg(REMAT_ERR_SHAPE, "slice: start and limit need %d entries", s.rank);
    return rp_val_result(FN(self), remat_slice_at(FN(self), a, start, limit, st == Py_None ? NULL : stride, loc));
}

static PyObject *m_index(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    long long i;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OiL:index", &lo, &a, &i) || !rp_get_loc(lo, &loc))
        return NULL;
    return rp_val_result(FN(self), remat_index_at(FN(self), a, i, loc));
}

static PyObject *m_concatenate(PyObject *self, PyObject *args)
{
    PyObject *lo, *vo;
    int axis, n;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OOi:concatenate", &lo, &vo, &axis) || !rp_get_loc(lo, &loc))
        return NULL;
    remat_val *v = rp_vals_in(vo, "concatenate: values", &n);
    if (!v)
        return NULL;
    remat_val r = remat_concatenate_at(FN(self), n, v, axis, loc);
    PyMem_Free(v);
    return rp_val_result(FN(self), r);
}

static PyObject *m_dot_general(PyObject *self, PyObject *args)
{
    PyObject *lo, *lc, *rc, *lb, *rb;
    int a, b;
    remat_loc loc;
    remat_dot_dims d = {0};
    if (!PyArg_ParseTuple(args, "OiiOOOO:dot_general", &lo, &a, &b, &lc, &rc, &lb, &rb) || !rp_get_loc(lo, &loc))
        return NULL;
    int n1 = rp_ints32(lc, "lhs_contracting", d.lhs_contract), n2 = rp_ints32(rc, "rhs_contracting", d.rhs_contract);
    int n3 = rp_ints32(lb, "lhs_batch", d.lhs_batch), n4 = rp_ints32(rb, "rhs_batch", d.rhs_batch);
    if (n1 < 0 || n2 < 0 || n3 < 0 || n4 < 0)
        return NULL;
    if (n1 != n2 || n3 != n4)
        return rp_raise_msg(REMAT_ERR_AXIS, "dot_general: lhs and rhs need as many contracting (%d, %d) and batch "
                                            "(%d, %d) dimensions", n1, n2, n3, n4);
    d.n_contract = n1;
    d.n_batch = n3;
    return rp_val_result(FN(self), remat_dot_general_at(FN(self), a, b, &d, loc));
}

static PyObject *m_matmul(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a, b;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oii:matmul", &lo, &a, &b) || !rp_get_loc(lo, &loc))
        return NULL;
    return rp_val_result(FN(self), remat_matmul_at(FN(self), a, b, loc));
}

static PyObject *m_solve(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a, b;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oii:solve", &lo, &a, &b) || !rp_get_loc(lo, &loc))
        return NULL;
    return rp_val_result(FN(self), remat_linear_solve_at(FN(self), a, b, loc));
}

static PyObject *m_name(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    const char *name;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Ois:name", &lo, &a, &name) || !rp_get_loc(lo, &loc))
        return NULL;
    return rp_val_result(FN(self), remat_name_at(FN(self), a, name, loc));
}

static PyObject *m_stop_gradient(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oi:stop_gradient", &lo, &a) || !rp_get_loc(lo, &loc))
        return NULL;
    return rp_val_result(FN(self), remat_stop_gradient_at(FN(self), a, loc));
}

static PyObject *m_output(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oi:output", &lo, &a) || !rp_get_loc(lo, &loc))
        return NULL;
    return rp_val_result(FN(self), remat_fn_output_at(FN(self), a, loc));
}

static PyObject *m_call(PyObject *self, PyObject *args)
{
    PyObject *lo, *callee_obj, *ao;
    remat_loc loc;
    int n;
    if (!PyArg_ParseTuple(args, "OOO:call", &lo, &callee_obj, &ao) || !rp_get_loc(lo, &loc))
        return NULL;
    remat_fn *callee = rp_fn_of(callee_obj, "call: callee");
    if (!callee)
        return NULL;
    int n_out = remat_fn_num_outputs(callee);
    remat_val *a = rp_vals_in(ao, "call: args", &n), *outs = a ? PyMem_Malloc(sizeof *outs * (size_t)(n_out + 1)) : NULL;
    PyObject *r = NULL;
    if (outs) {
        remat_status st = remat_call_at(FN(self), callee, n, a, outs, loc);
        r = st == REMAT_OK && remat_fn_status(FN(self)) == REMAT_OK ? rp_vals_out(outs, n_out) : rp_build_error(FN(self));
    }
    PyMem_Free(a);
    PyMem_Free(outs);
    return r;
}

static PyObject *m_aval(PyObject *self, PyObject *args)
{
    int a;
    if (!PyArg_ParseTuple(args, "i:aval", &a))
        return NULL;
    remat_dtype dt = remat_val_dtype(FN(self), a);
    remat_shape s = remat_val_shape(FN(self), a);
    if (s.rank < 0)
        return rp_raise(REMAT_ERR_ARG);
    PyObject *t = PyTuple_New(s.rank);
    for (int i = 0; t && i < s.rank; i++) {
        PyObject *x = PyLong_FromLongLong(s.dims[i]);
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t ? Py_BuildValue("(sNs)", dt == REMAT_F64 ? "float64" : "float32", t,
                             remat_op_name(remat_val_op(FN(self), a)))
             : NULL;
}

static PyObject *m_info(PyObject *self, PyObject *unused)
{
    remat_fn *f = FN(self);
    int na = remat_fn_num_args(f), no = remat_fn_num_outputs(f);
    PyObject *args = PyList_New(na), *outs = PyList_New(no);
    for (int i = 0; args && outs && i < na; i++) {
        PyObject *t = Py_BuildValue("(si)", remat_fn_arg_name(f, i), remat_fn_arg(f, i));
        if (!t)
            goto fail;
        PyList_SET_ITEM(args, i, t);
    }
    for (int i = 0; args && outs && i < no; i++) {
        PyObject *t = PyLong_FromLong(remat_fn_out(f, i));
        if (!t)
            goto fail;
        PyList_SET_ITEM(outs, i, t);
    }
    if (args && outs)
        return Py_BuildValue("{s:s,s:N,s:N,s:i}", "name", remat_fn_name(f), "args", args, "outputs", outs, "nodes",
                             remat_fn_num_nodes(f));
fail:
    Py_XDECREF(args);
    Py_XDECREF(outs);
    return NULL;
}

/* remat_fn_print's listing as a str */
static PyObject *m_text(PyObject *self, PyObject *unused)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return PyErr_NoMemory();
    remat_fn_print(FN(self), mem);
    fclose(mem);
    PyObject *s = PyUnicode_DecodeUTF8(buf ? buf : "", (Py_ssize_t)len, "replace");
    free(buf);
    return s;
}

static PyMethodDef fn_methods[] = {
    {"arg", m_arg, METH_VARARGS, NULL},
    {"const", m_const, METH_VARARGS, NULL},
    {"fill", m_fill, METH_VARARGS, NULL},
    {"unary", m_unary, METH_VARARGS, NULL},
    {"binary", m_binary, METH_VARARGS, NULL},
    {"binary_scalar", m_binary_scalar, METH_VARARGS, NULL},
    {"integer_pow", m_integer_pow, METH_VARARGS, NULL},
    {"pow", m_pow, METH_VARARGS, NULL},
    {"select", m_select, METH_VARARGS, NULL},
    {"convert", m_convert, METH_VARARGS, NULL},
    {"sum", m_sum, METH_VARARGS, NULL},
    {"reduce_max", m_reduce_max, METH_VARARGS, NULL},
    {"reshape", m_reshape, METH_VARARGS, NULL},
    {"broadcast_in_dim", m_broadcast_in_dim, METH_VARARGS, NULL},
    {"transpose", m_transpose, METH_VARARGS, NULL},
    {"slice", m_slice, METH_VARARGS, NULL},
    {"index", m_index, METH_VARARGS, NULL},
    {"concatenate", m_concatenate, METH_VARARGS, NULL},
    {"dot_general", m_dot_general, METH_VARARGS, NULL},
    {"matmul", m_matmul, METH_VARARGS, NULL},
    {"solve", m_solve, METH_VARARGS, NULL},
    {"name", m_name, METH_VARARGS, NULL},
    {"stop_gradient", m_stop_gradient, METH_VARARGS, NULL},
    {"output", m_output, METH_VARARGS, NULL},
    {"call", m_call, METH_VARARGS, NULL},
    {"scan", rp_fn_scan, METH_VARARGS, NULL},
    {"aval", m_aval, METH_VARARGS, NULL},
    {"info", m_info, METH_NOARGS, NULL},
    {"text", m_text, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject rp_fn_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._remat.Fn",
    .tp_basicsize = sizeof(rp_fn),
    .tp_dealloc = fn_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A graph function (remat/graph.h); remat.Fn wraps it.",
    .tp_methods = fn_methods,
    .tp_new = fn_new,
};
