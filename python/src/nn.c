/* nn.c — network modules (remat/nn.h), their parameters and training
 * (remat/nn_train.h) from Python; remat/nn.py gives them Flax's names.
 * Parameter arrays are NumPy views of the values remat_nn_params owns (no
 * copy; an optimiser step updates them in place), kept alive by the view. */
#include "pyremat.h"

#include <pythread.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    remat_nn_module *m;
} rp_module;

typedef struct {
    PyObject_HEAD
    remat_nn_params *p;
} rp_params;

typedef struct {
    PyObject_HEAD
    remat_nn_trainer *t;
    PyObject *module, *params; /* the trainer reads both */
    int64_t in_features, n_out, batch;
    remat_dtype dt;
    PyThread_type_lock lock; /* a trainer steps on one thread at a time */
} rp_trainer;

static PyTypeObject module_type, params_type, trainer_type;

static PyObject *wrap_module(remat_nn_module *m)
{
    if (!m)
        return rp_raise(REMAT_ERR_ARG);
    rp_module *o = PyObject_New(rp_module, &module_type);
    if (!o) {
        remat_nn_module_free(m);
        return NULL;
    }
    o->m = m;
    return (PyObject *)o;
}

static remat_nn_module *module_of(PyObject *obj, const char *what)
{
    if (!PyObject_TypeCheck(obj, &module_type)) {
        rp_raise_msg(REMAT_ERR_ARG, "%s: expected a remat.nn module, got %s", what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((rp_module *)obj)->m;
}

static remat_nn_params *params_of(PyObject *obj, const char *what)
{
    if (!PyObject_TypeCheck(obj, &params_type)) {
        rp_raise_msg(REMAT_ERR_ARG, "%s: expected remat.nn parameters, got %s", what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((rp_params *)obj)->p;
}

static void module_dealloc(PyObject *self)
{
    remat_nn_module_free(((rp_module *)self)->m);
    Py_TYPE(self)->tp_free(self);
}

static void params_dealloc(PyObject *self)
{
    remat_nn_params_free(((rp_params *)self)->p);
    Py_TYPE(self)->tp_free(self);
}

static void trainer_dealloc(PyObject *self)
{
    rp_trainer *t = (rp_trainer *)self;
    if (t->lock)
        PyThread_free_lock(t->lock);
    remat_nn_trainer_free(t->t);
    Py_XDECREF(t->module);
    Py_XDECREF(t->params);
    Py_TYPE(self)->tp_free(self);
}

static int activation_of(const char *s, remat_nn_activation *a)
{
    remat_status st = remat_nn_activation_parse(s, a);
    if (st != REMAT_OK)
        rp_raise(st);
    return st == REMAT_OK;
}

static PyObject *n_dense(PyObject *m, PyObject *args)
{
    long long features;
    int bias = 1;
    if (!PyArg_ParseTuple(args, "L|p:Dense", &features, &bias))
        return NULL;
    return wrap_module(remat_nn_dense(features, bias));
}

static PyObject *n_layer_norm(PyObject *m, PyObject *args)
{
    double eps = 1e-6;
    if (!PyArg_ParseTuple(args, "|d:LayerNorm", &eps))
        return NULL;
    return wrap_module(remat_nn_layer_norm(eps));
}

static PyObject *n_act(PyObject *m, PyObject *args)
{
    const char *s;
    remat_nn_activation a;
    if (!PyArg_ParseTuple(args, "s:activation", &s) || !activation_of(s, &a))
        return NULL;
    return wrap_module(remat_nn_act(a));
}

static PyObject *n_sequential(PyObject *m, PyObject *args)
{
    PyObject *lo;
    if (!PyArg_ParseTuple(args, "O:Sequential", &lo))
        return NULL;
    PyObject *seq = PySequence_Fast(lo, "Sequential: expected a sequence of modules");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    remat_nn_module **mods = PyMem_Calloc((size_t)n + 1, sizeof *mods);
    int ok = mods != NULL;
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = (mods[i] = module_of(PySequence_Fast_GET_ITEM(seq, i), "Sequential")) != NULL;
    PyObject *r = ok ? wrap_module(remat_nn_sequential((int)n, mods)) : NULL;
    PyMem_Free(mods);
    Py_DECREF(seq);
    return r;
}

static PyObject *n_residual(PyObject *m, PyObject *args)
{
    PyObject *inner;
    if (!PyArg_ParseTuple(args, "O:Residual", &inner))
        return NULL;
    remat_nn_module *im = module_of(inner, "Residual");
    return im ? wrap_module(remat_nn_residual(im)) : NULL;
}

static PyObject *n_block(PyObject *m, PyObject *args)
{
    const char *name;
    PyObject *body;
    if (!PyArg_ParseTuple(args, "sO:Block", &name, &body))
        return NULL;
    remat_nn_module *bm = module_of(body, "Block");
    return bm ? wrap_module(remat_nn_block(name, bm)) : NULL;
}

static PyObject *n_mlp(PyObject *m, PyObject *args)
{
    long long features;
    int depth;
    const char *act = "relu";
    remat_nn_activation a;
    if (!PyArg_ParseTuple(args, "Li|s:MLP", &features, &depth, &act) || !activation_of(act, &a))
        return NULL;
    return wrap_module(remat_nn_mlp(features, depth, a));
}

static PyObject *n_ffn(PyObject *m, PyObject *args)
{
    long long width, hidden;
    const char *act = "gelu";
    remat_nn_activation a;
    if (!PyArg_ParseTuple(args, "LL|s:FFN", &width, &hidden, &act) || !activation_of(act, &a))
        return NULL;
    return wrap_module(remat_nn_ffn(width, hidden, a));
}

static PyObject *n_mlp_block(PyObject *m, PyObject *args)
{
    long long width;
    const char *act = "relu";
    remat_nn_activation a;
    if (!PyArg_ParseTuple(args, "L|s:MLPBlock", &width, &act) || !activation_of(act, &a))
        return NULL;
    return wrap_module(remat_nn_mlp_block(width, a));
}


static PyObject *n_remat(PyObject *m, PyObject *args)
{
    PyObject *mo, *po = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:remat", &mo, &po))
        return NULL;
    remat_nn_module *mm = module_of(mo, "remat");
    remat_policy *p;
    if (!mm || !rp_policy_of(po, &p))
        return NULL;
    PyObject *r = wrap_module(remat_nn_remat(mm, p));
    remat_policy_free(p);
    return r;
}

static PyObject *n_scan(PyObject *m, PyObject *args)
{
    PyObject *mo;
    long long length;
    const char *schedule = NULL;
    if (!PyArg_ParseTuple(args, "OL|z:scan", &mo, &length, &schedule))
        return NULL;
    remat_nn_module *mm = module_of(mo, "scan");
    if (!mm)
        return NULL;
    remat_scan_options o = {0};
    remat_status st;
    if (schedule && (st = remat_schedule_parse(schedule, &o.schedule)) != REMAT_OK)
        return rp_raise(st);
    return wrap_module(remat_nn_scan(mm, length, &o));
}

static PyObject *module_class(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(remat_nn_module_class(((rp_module *)self)->m));
}

static PyObject *n_init(PyObject *m, PyObject *args)
{
    PyObject *mo, *shape;
    unsigned long long seed;
    const char *dts = "float32";
    if (!PyArg_ParseTuple(args, "OKO|s:init", &mo, &seed, &shape, &dts))
        return NULL;
    remat_nn_module *mm = module_of(mo, "init");
    if (!mm)
        return NULL;
    remat_dtype dt = !strcmp(dts, "float64") ? REMAT_F64 : REMAT_F32;
    if (strcmp(dts, "float64") && strcmp(dts, "float32"))
        return rp_raise_msg(REMAT_ERR_DTYPE, "dtype '%s': remat has float32 and float64", dts);
    PyObject *seq = PySequence_Fast(shape, "init: shape");
    if (!seq)
        return NULL;
    int64_t dims[REMAT_MAX_RANK];
    Py_ssize_t rank = PySequence_Fast_GET_SIZE(seq);
    int ok = rank >= 1 && rank <= REMAT_MAX_RANK;
    if (!ok)
        rp_raise_msg(REMAT_ERR_SHAPE, "init: input shape of %zd dimensions (1 to %d)", rank, REMAT_MAX_RANK);
    for (Py_ssize_t i = 0; ok && i < rank; i++)
        ok = rp_int64_arg(PySequence_Fast_GET_ITEM(seq, i), "init: shape", 1, INT64_MAX, &dims[i]);
    Py_DECREF(seq);
    if (!ok)
        return NULL;
    remat_nn_params *p = NULL;
    remat_status st;
    Py_BEGIN_ALLOW_THREADS
    st = remat_nn_init(mm, remat_prng_key_from_seed(seed), dt, (int)rank, dims, &p);
    Py_END_ALLOW_THREADS
    if (st != REMAT_OK)
        return rp_raise(st);
    rp_params *o = PyObject_New(rp_params, &params_type);
    if (!o) {
        remat_nn_params_free(p);
        return NULL;
    }
    o->p = p;
    return (PyObject *)o;
}

/* [(path, array view)] in remat_nn_params order */
static PyObject *params_items(PyObject *self, PyObject *unused)
{
    remat_nn_params *p = ((rp_params *)self)->p;
    int n = remat_nn_params_count(p);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        remat_tensor t = remat_nn_params_tensor(p, i);
        npy_intp dims[REMAT_MAX_RANK];
        for (int k = 0; k < t.shape.rank; k++)
            dims[k] = t.shape.dims[k];
        PyObject *a = PyArray_New(&PyArray_Type, t.shape.rank, dims, t.dtype == REMAT_F64 ? NPY_DOUBLE : NPY_FLOAT,
                                  NULL, t.data, 0, NPY_ARRAY_CARRAY, NULL);
        if (a && PyArray_SetBaseObject((PyArrayObject *)a, self) == 0)
            Py_INCREF(self);
        else
            Py_CLEAR(a);
        PyObject *it = a ? Py_BuildValue("(sN)", remat_nn_params_name(p, i), a) : NULL;
        if (!it) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, it);
    }
    return l;
}

static PyObject *params_copy(PyObject *self, PyObject *unused)
{
    remat_nn_params *c = NULL;
    remat_status st = remat_nn_params_copy(((rp_params *)self)->p, &c);
    if (st != REMAT_OK)
        return rp_raise(st);
    rp_params *o = PyObject_New(rp_params, &params_type);
    if (!o) {
        remat_nn_params_free(c);
        return NULL;
    }
    o->p = c;
    return (PyObject *)o;
}

static PyObject *params_info(PyObject *self, PyObject *unused)
{
    remat_nn_params *p = ((rp_params *)self)->p;
    remat_shape s = remat_nn_params_out_shape(p);
    PyObject *t = PyTuple_New(s.rank < 0 ? 0 : s.rank);
    for (int i = 0; t && i < s.rank; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(s.dims[i]));
    return t ? Py_BuildValue("{s:L,s:n,s:N}", "numel", (long long)remat_nn_params_numel(p), "bytes",
                             (Py_ssize_t)remat_nn_params_bytes(p), "out_shape", t)
             : NULL;
}

/* loss_fn(module, params, loss, rows, in_features, n_out) -> a graph Fn handle */

static int loss_of(const char *s, remat_nn_loss *l)
{
    if (!strcmp(s, "softmax_cross_entropy"))
        *l = REMAT_NN_LOSS_SOFTMAX_CE;
    else if (!strcmp(s, "mse"))
        *l = REMAT_NN_LOSS_MSE;
    else {
        rp_raise_msg(REMAT_ERR_ARG, "loss '%s': expected softmax_cross_entropy or mse", s);
        return 0;
    }
    return 1;
}

static PyObject *n_loss_fn(PyObject *m, PyObject *args)
{
    PyObject *mo, *po;
    const char *ls;
    long long rows, in, out;
    remat_nn_loss l;
    if (!PyArg_ParseTuple(args, "OOsLLL:loss_fn", &mo, &po, &ls, &rows, &in, &out) || !loss_of(ls, &l))
        return NULL;
    remat_nn_module *mm = module_of(mo, "loss_fn");
    remat_nn_params *p = mm ? params_of(po, "loss_fn") : NULL;
    if (!p)
        return NULL;
    remat_fn *f = NULL;
    remat_status st = remat_nn_loss_fn(mm, p, l, rows, in, out, &f);
    return st == REMAT_OK ? rp_wrap_fn(f) : rp_raise(st);
}

/* apply(module, fn, x, params) -> y, in an Fn under construction */

static PyObject *n_apply(PyObject *m, PyObject *args)
{
    PyObject *mo, *fo, *po;
    int x;
    if (!PyArg_ParseTuple(args, "OOiO:apply", &mo, &fo, &x, &po))
        return NULL;
    remat_nn_module *mm = module_of(mo, "apply");
    remat_fn *f = mm ? rp_fn_of(fo, "apply") : NULL;
    if (!f)
        return NULL;
    PyObject *seq = PySequence_Fast(po, "apply: params");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    remat_val *v = PyMem_Calloc((size_t)n + 1, sizeof *v);
    int ok = v != NULL;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        long k = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        ok = !(k == -1 && PyErr_Occurred());
        v[i] = (remat_val)k;
    }
    Py_DECREF(seq);
    PyObject *r = NULL;
    if (ok) {
        remat_val y = REMAT_NONE;
        remat_status st = remat_nn_apply(mm, f, x, v, &y);
        if (st != REMAT_OK || y == REMAT_NONE) {
            rp_raise(st != REMAT_OK ? st : remat_fn_status(f));
            remat_fn_clear_error(f);
        } else {
            r = PyLong_FromLong(y);
        }
    }
    PyMem_Free(v);
    return r;
}

static PyObject *n_trainer(PyObject *m, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"module", "params", "in_features", "n_out", "loss", "optimizer", "lr", "momentum",
                          "nesterov", "batch", "shards", NULL};
    PyObject *mo, *po;
    long long in, out, batch = 32, shards = 0;
    const char *ls = "softmax_cross_entropy", *os = "adam";
    double lr = 1e-3, momentum = 0;
    int nesterov = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOLL|ssddpLL:Trainer", kws, &mo, &po, &in, &out, &ls, &os, &lr,
                                     &momentum, &nesterov, &batch, &shards))
        return NULL;
    remat_nn_module *mm = module_of(mo, "Trainer");
    remat_nn_params *p = mm ? params_of(po, "Trainer") : NULL;
    remat_nn_train_options o = {.lr = lr, .momentum = momentum, .nesterov = nesterov, .batch = batch, .shards = shards};
    if (!p || !loss_of(ls, &o.loss))
        return NULL;
    if (!strcmp(os, "adam"))
        o.optimizer = REMAT_NN_ADAM;
    else if (!strcmp(os, "sgd"))
        o.optimizer = REMAT_NN_SGD;
    else
        return rp_raise_msg(REMAT_ERR_ARG, "optimizer '%s': expected adam or sgd", os);
    remat_nn_trainer *t = NULL;
    remat_status st;
    Py_BEGIN_ALLOW_THREADS
    st = remat_nn_trainer_new(mm, p, in, out, &o, &t);
    Py_END_ALLOW_THREADS
    if (st != REMAT_OK)
        return rp_raise(st);
    rp_trainer *r = PyObject_New(rp_trainer, &trainer_type);
    if (!r) {
        remat_nn_trainer_free(t);
        return NULL;
    }
    r->t = t;
    r->lock = PyThread_allocate_lock();
    r->module = r->params = NULL;
    if (!r->lock) {
        Py_DECREF(r);
        return PyErr_NoMemory();
    }
    Py_INCREF(mo);
    Py_INCREF(po);
    r->module = mo;
    r->params = po;
    r->in_features = in;
    r->n_out = out;
    r->batch = batch;
    r->dt = remat_nn_params_tensor(p, 0).dtype;
    return (PyObject *)r;
}

/* rows x cols of the parameters' dtype, read in place */
static PyArrayObject *rows_in(rp_trainer *t, PyObject *obj, const char *what, int64_t cols, int64_t rows)
{
    int type = t->dt == REMAT_F64 ? NPY_DOUBLE : NPY_FLOAT;
    if (!PyArray_Check(obj) || PyArray_TYPE((PyArrayObject *)obj) != type) {
        rp_raise_msg(REMAT_ERR_DTYPE, "%s: expected a %s array (the parameters' dtype)", what,
                     type == NPY_DOUBLE ? "float64" : "float32");
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a)) {
        rp_raise_msg(REMAT_ERR_SHAPE, "%s: the array is not C-contiguous: pass np.ascontiguousarray(...)", what);
        return NULL;
    }
    if (PyArray_NDIM(a) != 2 || PyArray_DIM(a, 1) != cols || (rows >= 0 && PyArray_DIM(a, 0) != rows) ||
        PyArray_DIM(a, 0) < 1) {
        rp_raise_msg(REMAT_ERR_SHAPE, "%s: expected shape (rows, %lld)%s", what, (long long)cols,
                     rows >= 0 ? " with x's rows" : "");
        return NULL;
    }
    Py_INCREF(a);
    return a;
}

static PyObject *t_step(PyObject *self, PyObject *args)
{
    rp_trainer *t = (rp_trainer *)self;
    PyObject *xo, *yo;
    if (!PyArg_ParseTuple(args, "OO:step", &xo, &yo))
        return NULL;
    PyArrayObject *x = rows_in(t, xo, "x", t->in_features, -1);
    PyArrayObject *y = x ? rows_in(t, yo, "y", t->n_out, PyArray_DIM(x, 0)) : NULL;
    PyObject *r = NULL;
    if (y) {
        if (PyArray_DIM(x, 0) > t->batch) {
            rp_raise_msg(REMAT_ERR_SHAPE, "x: %zd rows, the trainer's batch is %lld", (Py_ssize_t)PyArray_DIM(x, 0),
                         (long long)t->batch);
        } else {
            double loss = 0;
            remat_status st;
            Py_BEGIN_ALLOW_THREADS
            PyThread_acquire_lock(t->lock, WAIT_LOCK);
            st = remat_nn_trainer_step(t->t, PyArray_DIM(x, 0), PyArray_DATA(x), PyArray_DATA(y), &loss);
            PyThread_release_lock(t->lock);
            Py_END_ALLOW_THREADS
            r = st == REMAT_OK ? PyFloat_FromDouble(loss) : rp_raise(st);
        }
    }
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

static PyObject *t_predict(PyObject *self, PyObject *args)
{
    rp_trainer *t = (rp_trainer *)self;
    PyObject *xo;
    if (!PyArg_ParseTuple(args, "O:predict", &xo))
        return NULL;
    PyArrayObject *x = rows_in(t, xo, "x", t->in_features, -1);
    if (!x)
        return NULL;
    npy_intp dims[2] = {PyArray_DIM(x, 0), t->n_out};
    PyArrayObject *out = (PyArrayObject *)PyArray_ZEROS(2, dims, t->dt == REMAT_F64 ? NPY_DOUBLE : NPY_FLOAT, 0);
    remat_status st = REMAT_OK;
    if (out) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(t->lock, WAIT_LOCK);
        st = remat_nn_trainer_predict(t->t, dims[0], PyArray_DATA(x), PyArray_DATA(out));
        PyThread_release_lock(t->lock);
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(x);
    if (out && st != REMAT_OK) {
        Py_DECREF(out);
        return rp_raise(st);
    }
    return (PyObject *)out;
}

static PyObject *t_plan(PyObject *self, PyObject *unused)
{
    remat_memory_plan pl = {0};
    remat_nn_trainer_plan(((rp_trainer *)self)->t, &pl);
    return Py_BuildValue("{s:n,s:n,s:L,s:n}", "arena_bytes", (Py_ssize_t)pl.arena_bytes, "residual_bytes",
                         (Py_ssize_t)pl.residual_bytes, "recompute_instructions", (long long)pl.recompute_instructions,
                         "peak_snapshot_bytes", (Py_ssize_t)pl.peak_snapshot_bytes);
}

/* seed 's batch as `remat mlp compare` draws it (splitmix64, remat/nn_data.h) */
static PyObject *n_splitmix_batch(PyObject *m, PyObject *args)
{
    unsigned long long state;
    long long rows, d, classes;
    if (!PyArg_ParseTuple(args, "KLLL:splitmix_batch", &state, &rows, &d, &classes))
        return NULL;
    npy_intp xd[2] = {rows, d}, yd[2] = {rows, classes};
    PyArrayObject *x = (PyArrayObject *)PyArray_ZEROS(2, xd, NPY_FLOAT, 0);
    PyArrayObject *y = x ? (PyArrayObject *)PyArray_ZEROS(2, yd, NPY_FLOAT, 0) : NULL;
    if (!y) {
        Py_XDECREF(x);
        return NULL;
    }
    uint64_t s = state;
    float *xv = PyArray_DATA(x), *yv = PyArray_DATA(y);
    for (int64_t i = 0; i < rows * d; i++)
        xv[i] = (float)((double)(remat_splitmix64_next(&s) >> 11) * 0x1p-52 - 1.0);
    for (int64_t r = 0; r < rows; r++)
        yv[r * classes + (int64_t)remat_splitmix64_below(&s, (uint64_t)classes)] = 1.0f;
    return Py_BuildValue("(NN)", x, y);
}

static PyMethodDef module_methods[] = {
    {"class_name", module_class, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static PyMethodDef params_methods[] = {
    {"items", params_items, METH_NOARGS, NULL},
    {"copy", params_copy, METH_NOARGS, NULL},
    {"info", params_info, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static PyMethodDef trainer_methods[] = {
    {"step", t_step, METH_VARARGS, NULL},
    {"predict", t_predict, METH_VARARGS, NULL},
    {"plan", t_plan, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject module_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._remat.Module",
    .tp_basicsize = sizeof(rp_module),
    .tp_dealloc = module_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = module_methods,
};
static PyTypeObject params_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._remat.Params",
    .tp_basicsize = sizeof(rp_params),
    .tp_dealloc = params_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = params_methods,
};
static PyTypeObject trainer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._remat.Trainer",
    .tp_basicsize = sizeof(rp_trainer),
    .tp_dealloc = trainer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = trainer_methods,
};

PyMethodDef rp_nn_functions[] = {
    {"nn_dense", n_dense, METH_VARARGS, NULL},
    {"nn_layer_norm", n_layer_norm, METH_VARARGS, NULL},
    {"nn_act", n_act, METH_VARARGS, NULL},
    {"nn_sequential", n_sequential, METH_VARARGS, NULL},
    {"nn_residual", n_residual, METH_VARARGS, NULL},
    {"nn_block", n_block, METH_VARARGS, NULL},
    {"nn_mlp", n_mlp, METH_VARARGS, NULL},
    {"nn_ffn", n_ffn, METH_VARARGS, NULL},
    {"nn_mlp_block", n_mlp_block, METH_VARARGS, NULL},
    {"nn_remat", n_remat, METH_VARARGS, NULL},
    {"nn_scan", n_scan, METH_VARARGS, NULL},
    {"nn_init", n_init, METH_VARARGS, NULL},
    {"nn_loss_fn", n_loss_fn, METH_VARARGS, NULL},
    {"nn_apply", n_apply, METH_VARARGS, NULL},
    {"nn_trainer", (PyCFunction)(void (*)(void))n_trainer, METH_VARARGS | METH_KEYWORDS, NULL},
    {"splitmix_batch", n_splitmix_batch, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int rp_nn_init(PyObject *module)
{
    if (PyType_Ready(&module_type) < 0 || PyType_Ready(&params_type) < 0 || PyType_Ready(&trainer_type) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Module", (PyObject *)&module_type) < 0 ? -1 : 0;
}
