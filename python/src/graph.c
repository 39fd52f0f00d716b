/* graph.c — remat._remat.Fn: the graph builder (remat/graph.h), its
 * transforms (remat/ad.h: checkpoint, vjp, grad, value_and_grad, jvp,
 * jacfwd, hvp, saved residuals), scan (remat/scan.h) and compiled programs
 * run on NumPy arrays (remat/exec.h). Values are the C handles (ints);
 * remat/graph.py gives them operators and jax.numpy's names. Every builder
 * takes the caller's (file, line) first: reports and errors name the
 * Python source, as they name the C source in C. */
#include "pyremat.h"

#include <pythread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    remat_fn *f;
} rp_fn;

typedef struct {
    PyObject_HEAD
    remat_program *p;
    PyThread_type_lock lock; /* a program runs on one thread at a time (remat/exec.h) */
} rp_program;

static PyTypeObject fn_type, program_type;
static PyObject *loc_files; /* file names kept alive: remat_loc points into them */

static int get_loc(PyObject *obj, remat_loc *loc)
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

static int get_dtype(const char *s, remat_dtype *dt)
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
static int ints64(PyObject *obj, const char *what, int64_t *out)
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

static int ints32(PyObject *obj, const char *what, int *out)
{
    int64_t v[REMAT_MAX_RANK];
    int n = ints64(obj, what, v);
    for (int i = 0; i < n; i++)
        out[i] = (int)v[i];
    return n;
}

/* A sequence of value handles (PyMem_Malloc'd array, *n its length). */
static remat_val *vals_in(PyObject *obj, const char *what, int *n)
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

static PyObject *vals_out(const remat_val *v, int n)
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
static PyObject *build_error(remat_fn *f)
{
    remat_status st = remat_fn_status(f);
    if (st == REMAT_OK)
        return rp_raise(REMAT_ERR_ARG);
    PyObject *r = rp_raise_msg(st, "%s", remat_fn_error(f));
    remat_fn_clear_error(f);
    remat_clear_error();
    return r;
}

static PyObject *val_result(remat_fn *f, remat_val v)
{
    if (v == REMAT_NONE || remat_fn_status(f) != REMAT_OK)
        return build_error(f);
    return PyLong_FromLong(v);
}

static PyObject *wrap_fn(remat_fn *f)
{
    if (!f)
        return rp_raise(REMAT_ERR_NOMEM);
    rp_fn *o = PyObject_New(rp_fn, &fn_type);
    if (!o) {
        remat_fn_free(f);
        return NULL;
    }
    o->f = f;
    return (PyObject *)o;
}

static remat_fn *fn_of(PyObject *obj, const char *what)
{
    if (!PyObject_TypeCheck(obj, &fn_type)) {
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
    return wrap_fn(remat_fn_new(name));
}

static void fn_dealloc(PyObject *self)
{
    remat_fn_free(((rp_fn *)self)->f);
    Py_TYPE(self)->tp_free(self);
}

#define FN(self) (((rp_fn *)(self))->f)

static PyObject *m_arg(PyObject *self, PyObject *args)
{
    PyObject *lo, *shape;
    const char *name, *dts;
    remat_loc loc;
    remat_dtype dt;
    int64_t dims[REMAT_MAX_RANK];
    if (!PyArg_ParseTuple(args, "OssO:arg", &lo, &name, &dts, &shape) || !get_loc(lo, &loc) || !get_dtype(dts, &dt))
        return NULL;
    int rank = ints64(shape, "shape", dims);
    if (rank < 0)
        return NULL;
    return val_result(FN(self), remat_arg_at(FN(self), name, dt, rank, dims, loc));
}

static PyObject *m_const(PyObject *self, PyObject *args)
{
    PyObject *lo, *arr;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OO:const", &lo, &arr) || !get_loc(lo, &loc))
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
    return val_result(FN(self), v);
}

static PyObject *m_fill(PyObject *self, PyObject *args)
{
    PyObject *lo, *shape;
    const char *dts;
    double value;
    remat_loc loc;
    remat_dtype dt;
    int64_t dims[REMAT_MAX_RANK];
    if (!PyArg_ParseTuple(args, "OsOd:fill", &lo, &dts, &shape, &value) || !get_loc(lo, &loc) || !get_dtype(dts, &dt))
        return NULL;
    int rank = ints64(shape, "shape", dims);
    if (rank < 0)
        return NULL;
    return val_result(FN(self), remat_const_fill_at(FN(self), dt, rank, dims, value, loc));
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
    if (!PyArg_ParseTuple(args, "Osi:unary", &lo, &name, &a) || !get_loc(lo, &loc) || !op_by_name(name, &op))
        return NULL;
    return val_result(FN(self), remat_unary_at(FN(self), op, a, loc));
}

static PyObject *m_binary(PyObject *self, PyObject *args)
{
    PyObject *lo;
    const char *name;
    int a, b;
    remat_loc loc;
    remat_op op;
    if (!PyArg_ParseTuple(args, "Osii:binary", &lo, &name, &a, &b) || !get_loc(lo, &loc) || !op_by_name(name, &op))
        return NULL;
    return val_result(FN(self), remat_binary_at(FN(self), op, a, b, loc));
}

static PyObject *m_binary_scalar(PyObject *self, PyObject *args)
{
    PyObject *lo;
    const char *name;
    int a;
    double s;
    remat_loc loc;
    remat_op op;
    if (!PyArg_ParseTuple(args, "Osid:binary_scalar", &lo, &name, &a, &s) || !get_loc(lo, &loc) ||
        !op_by_name(name, &op))
        return NULL;
    return val_result(FN(self), remat_binary_scalar_at(FN(self), op, a, s, loc));
}

static PyObject *m_integer_pow(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a, k;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oii:integer_pow", &lo, &a, &k) || !get_loc(lo, &loc))
        return NULL;
    return val_result(FN(self), remat_integer_pow_at(FN(self), a, k, loc));
}

static PyObject *m_pow(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    double p;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oid:pow", &lo, &a, &p) || !get_loc(lo, &loc))
        return NULL;
    return val_result(FN(self), remat_pow_at(FN(self), a, p, loc));
}

static PyObject *m_select(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int p, t, e;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oiii:select", &lo, &p, &t, &e) || !get_loc(lo, &loc))
        return NULL;
    return val_result(FN(self), remat_select_at(FN(self), p, t, e, loc));
}

static PyObject *m_convert(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    const char *dts;
    remat_loc loc;
    remat_dtype dt;
    if (!PyArg_ParseTuple(args, "Ois:convert", &lo, &a, &dts) || !get_loc(lo, &loc) || !get_dtype(dts, &dt))
        return NULL;
    return val_result(FN(self), remat_convert_at(FN(self), a, dt, loc));
}

/* sum / reduce_max over axes (None: all) */
static PyObject *reduce(PyObject *self, PyObject *args, int max)
{
    PyObject *lo, *axes_obj;
    int a, axes[REMAT_MAX_RANK], n = -1;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OiO:reduce", &lo, &a, &axes_obj) || !get_loc(lo, &loc))
        return NULL;
    if (axes_obj != Py_None && (n = ints32(axes_obj, "axis", axes)) < 0)
        return NULL;
    remat_val v;
    if (n < 0) {
        remat_shape s = remat_val_shape(FN(self), a);
        n = s.rank < 0 ? 0 : s.rank;
        for (int i = 0; i < n; i++)
            axes[i] = i;
    }
    v = max ? remat_reduce_max_at(FN(self), a, n, axes, loc) : remat_sum_at(FN(self), a, n, axes, loc);
    return val_result(FN(self), v);
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
    if (!PyArg_ParseTuple(args, "OiO|p:reshape", &lo, &a, &shape, &bcast) || !get_loc(lo, &loc))
        return NULL;
    int rank = ints64(shape, "shape", dims);
    if (rank < 0)
        return NULL;
    return val_result(FN(self), bcast ? remat_broadcast_to_at(FN(self), a, rank, dims, loc)
                                      : remat_reshape_at(FN(self), a, rank, dims, loc));
}

static PyObject *m_broadcast_in_dim(PyObject *self, PyObject *args)
{
    PyObject *lo, *shape, *bd;
    int a, bdims[REMAT_MAX_RANK];
    remat_loc loc;
    int64_t dims[REMAT_MAX_RANK];
    if (!PyArg_ParseTuple(args, "OiOO:broadcast_in_dim", &lo, &a, &shape, &bd) || !get_loc(lo, &loc))
        return NULL;
    int rank = ints64(shape, "shape", dims);
    if (rank < 0 || ints32(bd, "broadcast_dimensions", bdims) < 0)
        return NULL;
    return val_result(FN(self), remat_broadcast_in_dim_at(FN(self), a, rank, dims, bdims, loc));
}

static PyObject *m_transpose(PyObject *self, PyObject *args)
{
    PyObject *lo, *perm_obj;
    int a, perm[REMAT_MAX_RANK];
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OiO:transpose", &lo, &a, &perm_obj) || !get_loc(lo, &loc))
        return NULL;
    int n = ints32(perm_obj, "permutation", perm);
    if (n < 0)
        return NULL;
    remat_shape s = remat_val_shape(FN(self), a);
    if (s.rank >= 0 && n != s.rank)
        return rp_raise_msg(REMAT_ERR_AXIS, "transpose: a permutation of %d axes for a value of %d", n, s.rank);
    return val_result(FN(self), remat_transpose_at(FN(self), a, perm, loc));
}

static PyObject *m_slice(PyObject *self, PyObject *args)
{
    PyObject *lo, *so, *lim, *st = Py_None;
    int a;
    remat_loc loc;
    int64_t start[REMAT_MAX_RANK], limit[REMAT_MAX_RANK], stride[REMAT_MAX_RANK];
    if (!PyArg_ParseTuple(args, "OiOO|O:slice", &lo, &a, &so, &lim, &st) || !get_loc(lo, &loc))
        return NULL;
    int n = ints64(so, "start", start), m = n < 0 ? -1 : ints64(lim, "limit", limit);
    if (m < 0 || (st != Py_None && ints64(st, "strides", stride) < 0))
        return NULL;
    remat_shape s = remat_val_shape(FN(self), a);
    if (s.rank >= 0 && (n != s.rank || m != s.rank))
        return rp_raise_msg(REMAT_ERR_SHAPE, "slice: start and limit need %d entries", s.rank);
    return val_result(FN(self), remat_slice_at(FN(self), a, start, limit, st == Py_None ? NULL : stride, loc));
}

static PyObject *m_index(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    long long i;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OiL:index", &lo, &a, &i) || !get_loc(lo, &loc))
        return NULL;
    return val_result(FN(self), remat_index_at(FN(self), a, i, loc));
}

static PyObject *m_concatenate(PyObject *self, PyObject *args)
{
    PyObject *lo, *vo;
    int axis, n;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OOi:concatenate", &lo, &vo, &axis) || !get_loc(lo, &loc))
        return NULL;
    remat_val *v = vals_in(vo, "concatenate: values", &n);
    if (!v)
        return NULL;
    remat_val r = remat_concatenate_at(FN(self), n, v, axis, loc);
    PyMem_Free(v);
    return val_result(FN(self), r);
}

static PyObject *m_dot_general(PyObject *self, PyObject *args)
{
    PyObject *lo, *lc, *rc, *lb, *rb;
    int a, b;
    remat_loc loc;
    remat_dot_dims d = {0};
    if (!PyArg_ParseTuple(args, "OiiOOOO:dot_general", &lo, &a, &b, &lc, &rc, &lb, &rb) || !get_loc(lo, &loc))
        return NULL;
    int n1 = ints32(lc, "lhs_contracting", d.lhs_contract), n2 = ints32(rc, "rhs_contracting", d.rhs_contract);
    int n3 = ints32(lb, "lhs_batch", d.lhs_batch), n4 = ints32(rb, "rhs_batch", d.rhs_batch);
    if (n1 < 0 || n2 < 0 || n3 < 0 || n4 < 0)
        return NULL;
    if (n1 != n2 || n3 != n4)
        return rp_raise_msg(REMAT_ERR_AXIS, "dot_general: lhs and rhs need as many contracting (%d, %d) and batch "
                                            "(%d, %d) dimensions", n1, n2, n3, n4);
    d.n_contract = n1;
    d.n_batch = n3;
    return val_result(FN(self), remat_dot_general_at(FN(self), a, b, &d, loc));
}

static PyObject *m_matmul(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a, b;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oii:matmul", &lo, &a, &b) || !get_loc(lo, &loc))
        return NULL;
    return val_result(FN(self), remat_matmul_at(FN(self), a, b, loc));
}

static PyObject *m_solve(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a, b;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oii:solve", &lo, &a, &b) || !get_loc(lo, &loc))
        return NULL;
    return val_result(FN(self), remat_linear_solve_at(FN(self), a, b, loc));
}

static PyObject *m_name(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    const char *name;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Ois:name", &lo, &a, &name) || !get_loc(lo, &loc))
        return NULL;
    return val_result(FN(self), remat_name_at(FN(self), a, name, loc));
}

static PyObject *m_stop_gradient(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oi:stop_gradient", &lo, &a) || !get_loc(lo, &loc))
        return NULL;
    return val_result(FN(self), remat_stop_gradient_at(FN(self), a, loc));
}

static PyObject *m_output(PyObject *self, PyObject *args)
{
    PyObject *lo;
    int a;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "Oi:output", &lo, &a) || !get_loc(lo, &loc))
        return NULL;
    return val_result(FN(self), remat_fn_output_at(FN(self), a, loc));
}

static PyObject *m_call(PyObject *self, PyObject *args)
{
    PyObject *lo, *callee_obj, *ao;
    remat_loc loc;
    int n;
    if (!PyArg_ParseTuple(args, "OOO:call", &lo, &callee_obj, &ao) || !get_loc(lo, &loc))
        return NULL;
    remat_fn *callee = fn_of(callee_obj, "call: callee");
    if (!callee)
        return NULL;
    int n_out = remat_fn_num_outputs(callee);
    remat_val *a = vals_in(ao, "call: args", &n), *outs = a ? PyMem_Malloc(sizeof *outs * (size_t)(n_out + 1)) : NULL;
    PyObject *r = NULL;
    if (outs) {
        remat_status st = remat_call_at(FN(self), callee, n, a, outs, loc);
        r = st == REMAT_OK && remat_fn_status(FN(self)) == REMAT_OK ? vals_out(outs, n_out) : build_error(FN(self));
    }
    PyMem_Free(a);
    PyMem_Free(outs);
    return r;
}

/* A policy from None, a built-in's name, or (kind, names). A new reference
 * (NULL policy: nothing_saveable); 0 with an exception. */
static int policy_of(PyObject *spec, remat_policy **out)
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

static PyObject *m_scan(PyObject *self, PyObject *args)
{
    PyObject *lo, *body_obj, *io, *xo, *co, *policy_obj;
    long long length, unroll;
    const char *schedule;
    int reverse, ni, nx, nc;
    remat_loc loc;
    if (!PyArg_ParseTuple(args, "OOLOOOzpOL:scan", &lo, &body_obj, &length, &io, &xo, &co, &schedule, &reverse,
                          &policy_obj, &unroll) ||
        !get_loc(lo, &loc))
        return NULL;
    remat_fn *body = fn_of(body_obj, "scan: body");
    if (!body)
        return NULL;
    remat_scan_options opt = {.reverse = reverse, .unroll = unroll};
    remat_status st;
    if (schedule && (st = remat_schedule_parse(schedule, &opt.schedule)) != REMAT_OK)
        return rp_raise(st);
    remat_policy *pol = NULL;
    if (!policy_of(policy_obj, &pol))
        return NULL;
    opt.body_policy = pol;
    remat_val *init = vals_in(io, "scan: init", &ni), *xs = init ? vals_in(xo, "scan: xs", &nx) : NULL;
    remat_val *consts = xs ? vals_in(co, "scan: consts", &nc) : NULL;
    int n_ys = remat_fn_num_outputs(body) - ni;
    remat_val *carry = consts ? PyMem_Malloc(sizeof *carry * (size_t)(ni + 1)) : NULL;
    remat_val *ys = carry ? PyMem_Malloc(sizeof *ys * (size_t)(n_ys > 0 ? n_ys + 1 : 1)) : NULL;
    PyObject *r = NULL;
    if (ys) {
        st = remat_scan_at(FN(self), body, length, ni, init, nx, xs, nc, consts, &opt, carry, n_ys > 0 ? ys : NULL,
                           loc);
        if (st != REMAT_OK || remat_fn_status(FN(self)) != REMAT_OK)
            r = remat_fn_status(FN(self)) != REMAT_OK ? build_error(FN(self)) : rp_raise(st);
        else
            r = Py_BuildValue("(NN)", vals_out(carry, ni), vals_out(ys, n_ys > 0 ? n_ys : 0));
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
    {"scan", m_scan, METH_VARARGS, NULL},
    {"aval", m_aval, METH_VARARGS, NULL},
    {"info", m_info, METH_NOARGS, NULL},
    {"text", m_text, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject fn_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._remat.Fn",
    .tp_basicsize = sizeof(rp_fn),
    .tp_dealloc = fn_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A graph function (remat/graph.h); remat.Fn wraps it.",
    .tp_methods = fn_methods,
    .tp_new = fn_new,
};

/* ---- transforms ---- */

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
    remat_fn *f = fn_of(fo, what), *out = NULL;
    if (!f || !argnums_in(ao, argnums, &n))
        return NULL;
    remat_status st = t(f, n, argnums, &out);
    return st == REMAT_OK ? wrap_fn(out) : rp_raise(st);
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
    remat_fn *f = fn_of(fo, "checkpoint");
    remat_policy *p;
    if (!f || !policy_of(po, &p))
        return NULL;
    remat_fn *c = remat_checkpoint(f, p);
    remat_policy_free(p);
    if (!c)
        return rp_raise(remat_fn_status(f) != REMAT_OK ? remat_fn_status(f) : REMAT_ERR_ARG);
    return wrap_fn(c);
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
    remat_fn *f = fn_of(fo, "saved_residuals");
    if (!f || !argnums_in(ao, argnums, &n))
        return NULL;
    remat_residual_list *r = NULL;
    remat_status st = remat_saved_residuals(f, n, argnums, &r);
    return st == REMAT_OK ? residual_list(r) : rp_raise(st);
}

/* ---- programs ---- */

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
    remat_fn *f = fn_of(fo, "compile");
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
    rp_program *obj = PyObject_New(rp_program, &program_type);
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

static PyTypeObject program_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._remat.Program",
    .tp_basicsize = sizeof(rp_program),
    .tp_dealloc = program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled function (remat/exec.h); made by compile().",
    .tp_methods = program_methods,
};

int rp_policy_of(PyObject *spec, remat_policy **out)
{
    return policy_of(spec, out);
}

PyObject *rp_wrap_fn(remat_fn *f)
{
    return wrap_fn(f);
}

remat_fn *rp_fn_of(PyObject *obj, const char *what)
{
    return fn_of(obj, what);
}

PyMethodDef rp_graph_functions[] = {
    {"vjp", f_vjp, METH_VARARGS, NULL},
    {"grad", f_grad, METH_VARARGS, NULL},
    {"value_and_grad", f_value_and_grad, METH_VARARGS, NULL},
    {"jvp", f_jvp, METH_VARARGS, NULL},
    {"jacfwd", f_jacfwd, METH_VARARGS, NULL},
    {"hvp", f_hvp, METH_VARARGS, NULL},
    {"checkpoint", f_checkpoint, METH_VARARGS, NULL},
    {"saved_residuals", f_saved_residuals, METH_VARARGS, NULL},
    {"compile", f_compile, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int rp_graph_init(PyObject *module)
{
    if (!(loc_files = PyDict_New()) || PyType_Ready(&fn_type) < 0 || PyType_Ready(&program_type) < 0)
        return -1;
    if (PyModule_AddObjectRef(module, "Fn", (PyObject *)&fn_type) < 0 ||
        PyModule_AddObjectRef(module, "Program", (PyObject *)&program_type) < 0)
        return -1;
    return 0;
}
