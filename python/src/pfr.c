/* pfr.c — the plug-flow reactor (remat/pfr.h) from Python: one reactor's
 * outlet, profile and objective gradient (pfr_simulate), and an ensemble of
 * parameter sets with their Jacobians (pfr_ensemble). The options arrive
 * resolved by remat/kinetics.py; the computation runs without the GIL. */
#include "pyremat.h"

#include <math.h>
#include <pythread.h>
#include <string.h>

/* The reactor options shared by both functions, as keywords. */
typedef struct {
    PyObject *mech, *inlet;
    const char *method, *schedule;
    double length, dt, rtol, atol;
    long long steps, max_steps, points;
    int adaptive, goal, species;
} opt_args;

#define OPT_KW "mechanism", "inlet", "method", "length", "steps", "dt", "adaptive", "rtol", "atol", "max_steps", \
               "profile_points", "goal", "species", "schedule"
#define OPT_FORMAT "OOsdLdpddLLiiz"
#define OPT_PTRS(a)                                                                                               \
    &(a).mech, &(a).inlet, &(a).method, &(a).length, &(a).steps, &(a).dt, &(a).adaptive, &(a).rtol, &(a).atol,    \
        &(a).max_steps, &(a).points, &(a).goal, &(a).species, &(a).schedule

/* The options into o (inlet: a new reference in *inlet). 0 with an exception. */
static int read_opts(const opt_args *a, remat_mechanism **m, remat_pfr_options *o, PyArrayObject **inlet)
{
    memset(o, 0, sizeof *o);
    *inlet = NULL;
    if (!(*m = rp_mechanism_of(a->mech, "mechanism")))
        return 0;
    npy_intp S = remat_mechanism_species_count(*m);
    if (!(*inlet = rp_f64_in(a->inlet, "inlet", 1, &S, 1)))
        return 0;
    remat_status st = remat_ode_method_parse(a->method, &o->method);
    if (st == REMAT_OK && a->schedule)
        st = remat_schedule_parse(a->schedule, &o->schedule);
    if (st != REMAT_OK) {
        rp_raise(st);
        return 0;
    }
    if (a->goal < 0 || a->goal > 2) {
        rp_raise_msg(REMAT_ERR_ARG, "goal: %d is not 0 (none), 1 (maximize) or 2 (minimize)", a->goal);
        return 0;
    }
    o->length = a->length;
    o->steps = a->steps;
    o->dt = a->dt;
    o->inlet = PyArray_DATA(*inlet);
    o->goal = (remat_pfr_goal)a->goal;
    o->species = a->species;
    o->adaptive = a->adaptive;
    o->rtol = a->rtol;
    o->atol = a->atol;
    o->max_steps = a->max_steps;
    o->profile_points = a->points;
    return 1;
}

static PyObject *negative_of(const remat_pfr *r, int64_t rows, const double *y)
{
    int64_t row;
    int s;
    if (!remat_pfr_negative(r, rows, y, &row, &s))
        Py_RETURN_NONE;
    return Py_BuildValue("(Li)", (long long)row, s);
}

static PyObject *pfr_simulate(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kws[] = {OPT_KW, "params", "profile", "gradient", NULL};
    opt_args a = {.method = "euler", .length = 10};
    PyObject *params_obj;
    int want_profile = 1, want_grad = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, OPT_FORMAT "O|pp:pfr_simulate", kws, OPT_PTRS(a), &params_obj,
                                     &want_profile, &want_grad))
        return NULL;
    remat_mechanism *m;
    remat_pfr_options o;
    PyArrayObject *inlet = NULL, *params = NULL, *outlet = NULL, *z = NULL, *y = NULL, *grad = NULL;
    PyObject *res = NULL, *neg = NULL;
    remat_pfr *r = NULL;
    if (!read_opts(&a, &m, &o, &inlet))
        goto done;
    npy_intp S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    if (!(params = rp_f64_in(params_obj, "params", 1, &P, 1)))
        goto done;
    remat_status st = remat_pfr_new(m, &o, &r);
    if (st != REMAT_OK) {
        rp_raise(st);
        goto done;
    }
    npy_intp rows = (npy_intp)remat_pfr_steps(r) + 1, shape[2] = {rows, S};
    want_grad = want_grad && o.goal != REMAT_PFR_NO_GOAL && P > 0;
    if (!(outlet = rp_f64_new(1, &S)) || !(grad = rp_f64_new(1, &P)))
        goto done;
    if (want_profile && (!(z = rp_f64_new(1, &rows)) || !(y = rp_f64_new(2, shape))))
        goto done;
    double stats[REMAT_ODE_STATS] = {0}, obj = 0;
    const double *p = PyArray_DATA(params);
    Py_BEGIN_ALLOW_THREADS
    st = remat_pfr_outlet(r, p, PyArray_DATA(outlet));
    if (st == REMAT_OK)
        st = remat_pfr_integration_stats(r, p, stats);
    if (st == REMAT_OK && want_grad)
        st = remat_pfr_objective(r, p, &obj, PyArray_DATA(grad));
    if (st == REMAT_OK && want_profile)
        st = remat_pfr_profile(r, p, PyArray_DATA(z), PyArray_DATA(y));
    Py_END_ALLOW_THREADS
    if (st != REMAT_OK) {
        rp_raise(st);
        goto done;
    }
    neg = want_profile ? negative_of(r, rows, PyArray_DATA(y)) : negative_of(r, 1, PyArray_DATA(outlet));
    if (!neg)
        goto done;
    res = Py_BuildValue("{s:O,s:O,s:O,s:O,s:d,s:L,s:d,s:d,s:d,s:O}", "outlet", outlet, "z", z ? (PyObject *)z : Py_None,
                        "profile", y ? (PyObject *)y : Py_None, "gradient", want_grad ? (PyObject *)grad : Py_None,
                        "objective", want_grad ? obj : Py_NAN, "steps", (long long)remat_pfr_steps(r), "step_size",
                        remat_pfr_step_size(r), "accepted", stats[REMAT_ODE_STAT_ACCEPTED], "rejected",
                        stats[REMAT_ODE_STAT_REJECTED], "negative", neg);
done:
    remat_pfr_free(r);
    Py_XDECREF(neg);
    Py_XDECREF(inlet);
    Py_XDECREF(params);
    Py_XDECREF(outlet);
    Py_XDECREF(z);
    Py_XDECREF(y);
    Py_XDECREF(grad);
    return res;
}

/* outlets (n, S) and jac (n, S, n_vary) for sets (n, n_vary), in runs of at most `lanes` sets. */
static PyObject *pfr_ensemble(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kws[] = {OPT_KW, "vary", "base", "sets", "lanes", "jacobian", NULL};
    opt_args a = {.method = "euler", .length = 10};
    PyObject *vary_obj, *base_obj, *sets_obj;
    long long lanes = 1024;
    int want_jac = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, OPT_FORMAT "OOO|Lp:pfr_ensemble", kws, OPT_PTRS(a), &vary_obj,
                                     &base_obj, &sets_obj, &lanes, &want_jac))
        return NULL;
    remat_mechanism *m;
    remat_pfr_options o;
    PyArrayObject *inlet = NULL, *base = NULL, *sets = NULL, *outlet = NULL, *jac = NULL;
    PyObject *res = NULL, *vary_seq = NULL;
    remat_pfr_ensemble *e = NULL;
    int *vary = NULL;
    if (!read_opts(&a, &m, &o, &inlet))
        goto done;
    npy_intp S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    if (!(vary_seq = PySequence_Fast(vary_obj, "vary: expected a sequence of parameter indices")))
        goto done;
    Py_ssize_t nv = PySequence_Fast_GET_SIZE(vary_seq);
    if (nv < 1 || nv > 64) {
        rp_raise_msg(REMAT_ERR_ARG, "vary: %zd parameters; between 1 and 64 may vary", nv);
        goto done;
    }
    if (!(vary = PyMem_Calloc((size_t)nv, sizeof *vary))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < nv; j++) {
        int64_t v;
        if (!rp_int64_arg(PySequence_Fast_GET_ITEM(vary_seq, j), "vary", 0, P - 1, &v))
            goto done;
        vary[j] = (int)v;
    }
    npy_intp set_shape[2] = {-1, nv};
    if (!(base = rp_f64_in(base_obj, "base", 1, &P, 1)) || !(sets = rp_f64_in(sets_obj, "params", 2, set_shape, 0)))
        goto done;
    npy_intp n = PyArray_DIM(sets, 0), oshape[2] = {n, S}, jshape[3] = {n, S, nv};
    if (!(outlet = rp_f64_new(2, oshape)) || (want_jac && !(jac = rp_f64_new(3, jshape))))
        goto done;
    if (lanes > n && n > 0)
        lanes = n;
    remat_status st = REMAT_OK;
    const double *sd = PyArray_DATA(sets), *bd = PyArray_DATA(base);
    double *od = PyArray_DATA(outlet), *jd = jac ? PyArray_DATA(jac) : NULL;
    Py_BEGIN_ALLOW_THREADS
    st = remat_pfr_ensemble_new(m, &o, lanes, (int)nv, vary, bd, &e);
    for (npy_intp i = 0; st == REMAT_OK && i < n; i += lanes) {
        int64_t k = n - i < lanes ? n - i : lanes;
        st = remat_pfr_ensemble_run(e, k, sd + i * nv, od + i * S, jd ? jd + i * S * nv : NULL);
    }
    Py_END_ALLOW_THREADS
    if (st != REMAT_OK) {
        rp_raise(st);
        goto done;
    }
    res = Py_BuildValue("{s:O,s:O}", "outlet", outlet, "jacobian", jac ? (PyObject *)jac : Py_None);
done:
    remat_pfr_ensemble_free(e);
    PyMem_Free(vary);
    Py_XDECREF(vary_seq);
    Py_XDECREF(inlet);
    Py_XDECREF(base);
    Py_XDECREF(sets);
    Py_XDECREF(outlet);
    Py_XDECREF(jac);
    return res;
}

/* Adam on the objective (remat_pfr_adam, `remat pfr optimize`): params (P,)
 * from start, lower bound lo on every parameter (-inf: none). */
static PyObject *pfr_adam(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kws[] = {OPT_KW, "start", "lr", "iters", "lo", "b1", "b2", "eps", NULL};
    opt_args a = {.method = "euler", .length = 10};
    PyObject *start_obj;
    double lr = 0.1, lo = -INFINITY, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    long long iters = 50;
    if (!PyArg_ParseTupleAndKeywords(args, kw, OPT_FORMAT "O|dLdddd:pfr_adam", kws, OPT_PTRS(a), &start_obj, &lr,
                                     &iters, &lo, &b1, &b2, &eps))
        return NULL;
    remat_mechanism *m;
    remat_pfr_options o;
    PyArrayObject *inlet = NULL, *start = NULL, *params = NULL, *before = NULL, *after = NULL;
    PyObject *res = NULL;
    remat_pfr *r = NULL;
    double *los = NULL;
    if (!read_opts(&a, &m, &o, &inlet))
        goto done;
    npy_intp P = remat_mechanism_param_count(m), n = iters, ap[2] = {iters, P};
    if (iters < 1) {
        rp_raise_msg(REMAT_ERR_ARG, "iters: %lld; at least 1", iters);
        goto done;
    }
    if (!(start = rp_f64_in(start_obj, "start", 1, &P, 1)) || !(params = rp_f64_new(1, &P)) ||
        !(before = rp_f64_new(1, &n)) || !(after = rp_f64_new(2, ap)))
        goto done;
    memcpy(PyArray_DATA(params), PyArray_DATA(start), sizeof(double) * (size_t)P);
    if (!(los = PyMem_Calloc(2 * ((size_t)P + 1), sizeof *los))) {
        PyErr_NoMemory();
        goto done;
    }
    double *his = los + P + 1;
    /* as the tool's optimize: declared bounds win ("in [-inf, 0]" keeps its
     * -inf; a network's weights are declared unbounded), lo (min_param)
     * bounds the parameters declared without any */
    for (npy_intp i = 0; i < P; i++) {
        double dlo = remat_mechanism_param_lo(m, (int)i), dhi = remat_mechanism_param_hi(m, (int)i);
        int declared = isfinite(dlo) || isfinite(dhi) || remat_mechanism_param_net(m, (int)i) >= 0;
        los[i] = declared ? dlo : lo;
        his[i] = dhi;
    }
    remat_adam_options ad = remat_adam_optax(lr);
    ad.b1 = b1;
    ad.b2 = b2;
    ad.eps = eps;
    ad.lo = los;
    ad.hi = his;
    double final = 0;
    remat_status st = remat_pfr_new(m, &o, &r);
    if (st == REMAT_OK) {
        Py_BEGIN_ALLOW_THREADS
        st = remat_pfr_adam(r, &ad, iters, PyArray_DATA(params), PyArray_DATA(before), PyArray_DATA(after), &final);
        Py_END_ALLOW_THREADS
    }
    if (st != REMAT_OK) {
        rp_raise(st);
        goto done;
    }
    res = Py_BuildValue("{s:O,s:O,s:O,s:d}", "params", params, "conc_before", before, "params_after", after,
                        "conc_final", final);
done:
    remat_pfr_free(r);
    PyMem_Free(los);
    Py_XDECREF(inlet);
    Py_XDECREF(start);
    Py_XDECREF(params);
    Py_XDECREF(before);
    Py_XDECREF(after);
    return res;
}

/* ---- a reactor kept between calls (remat_pfr: its programs compile on
 * first use and are reused; one thread at a time, hence the lock) ---- */
typedef struct {
    PyObject_HEAD
    remat_pfr *r;
    PyObject *mech; /* remat_pfr keeps a pointer to the mechanism */
    PyThread_type_lock lock;
    npy_intp S, P;
} rp_reactor;

static void reactor_dealloc(PyObject *self)
{
    rp_reactor *o = (rp_reactor *)self;
    remat_pfr_free(o->r);
    if (o->lock)
        PyThread_free_lock(o->lock);
    Py_XDECREF(o->mech);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject reactor_type;

static PyObject *pfr_reactor(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kws[] = {OPT_KW, NULL};
    opt_args a = {.method = "euler", .length = 10};
    if (!PyArg_ParseTupleAndKeywords(args, kw, OPT_FORMAT ":pfr_reactor", kws, OPT_PTRS(a)))
        return NULL;
    remat_mechanism *m;
    remat_pfr_options o;
    PyArrayObject *inlet = NULL;
    if (!read_opts(&a, &m, &o, &inlet))
        return NULL;
    remat_pfr *r = NULL;
    remat_status st = remat_pfr_new(m, &o, &r); /* copies the inlet */
    Py_DECREF(inlet);
    if (st != REMAT_OK)
        return rp_raise(st);
    rp_reactor *obj = PyObject_New(rp_reactor, &reactor_type);
    if (!obj) {
        remat_pfr_free(r);
        return NULL;
    }
    obj->r = r;
    obj->lock = PyThread_allocate_lock();
    Py_INCREF(a.mech);
    obj->mech = a.mech;
    obj->S = remat_mechanism_species_count(m);
    obj->P = remat_mechanism_param_count(m);
    if (!obj->lock) {
        Py_DECREF(obj);
        return PyErr_NoMemory();
    }
    return (PyObject *)obj;
}

enum { R_OUTLET, R_OBJECTIVE, R_PROFILE };

static PyObject *reactor_call(PyObject *self, PyObject *params_obj, int what)
{
    rp_reactor *o = (rp_reactor *)self;
    PyArrayObject *params = rp_f64_in(params_obj, "params", 1, &o->P, 1), *a = NULL, *b = NULL;
    if (!params)
        return NULL;
    npy_intp rows = (npy_intp)remat_pfr_steps(o->r) + 1, shape[2] = {rows, o->S};
    if (what == R_OUTLET)
        a = rp_f64_new(1, &o->S);
    else if (what == R_OBJECTIVE)
        a = rp_f64_new(1, &o->P);
    else if ((a = rp_f64_new(1, &rows)))
        b = rp_f64_new(2, shape);
    PyObject *res = NULL;
    if (a && (what != R_PROFILE || b)) {
        double obj = 0;
        remat_status st;
        const double *p = PyArray_DATA(params);
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(o->lock, WAIT_LOCK);
        st = what == R_OUTLET      ? remat_pfr_outlet(o->r, p, PyArray_DATA(a))
             : what == R_OBJECTIVE ? remat_pfr_objective(o->r, p, &obj, PyArray_DATA(a))
                                   : remat_pfr_profile(o->r, p, PyArray_DATA(a), PyArray_DATA(b));
        PyThread_release_lock(o->lock);
        Py_END_ALLOW_THREADS
        if (st != REMAT_OK)
            rp_raise(st);
        else if (what == R_OUTLET)
            res = (PyObject *)a, a = NULL;
        else if (what == R_OBJECTIVE)
            res = Py_BuildValue("(dO)", obj, a);
        else
            res = PyTuple_Pack(2, (PyObject *)a, (PyObject *)b);
    }
    Py_DECREF(params);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return res;
}

static PyObject *reactor_outlet(PyObject *self, PyObject *p) { return reactor_call(self, p, R_OUTLET); }
static PyObject *reactor_objective(PyObject *self, PyObject *p) { return reactor_call(self, p, R_OBJECTIVE); }
static PyObject *reactor_profile(PyObject *self, PyObject *p) { return reactor_call(self, p, R_PROFILE); }

static PyObject *reactor_info(PyObject *self, PyObject *unused)
{
    rp_reactor *o = (rp_reactor *)self;
    return Py_BuildValue("{s:L,s:d}", "steps", (long long)remat_pfr_steps(o->r), "step_size",
                         remat_pfr_step_size(o->r));
}

static PyMethodDef reactor_methods[] = {
    {"outlet", reactor_outlet, METH_O, "outlet(params) -> C(L) (remat_pfr_outlet)"},
    {"objective", reactor_objective, METH_O, "objective(params) -> (value, gradient) (remat_pfr_objective)"},
    {"profile", reactor_profile, METH_O, "profile(params) -> (z, C) (remat_pfr_profile)"},
    {"info", reactor_info, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject reactor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "remat._remat.Reactor",
    .tp_basicsize = sizeof(rp_reactor),
    .tp_dealloc = reactor_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = reactor_methods,
};

int rp_pfr_init(PyObject *module)
{
    return PyType_Ready(&reactor_type);
}

PyMethodDef rp_pfr_functions[] = {
    {"pfr_simulate", (PyCFunction)(void (*)(void))pfr_simulate, METH_VARARGS | METH_KEYWORDS,
     "One reactor: outlet, profile, objective and gradient (remat/pfr.h)."},
    {"pfr_ensemble", (PyCFunction)(void (*)(void))pfr_ensemble, METH_VARARGS | METH_KEYWORDS,
     "Many parameter sets: outlets and d outlet / d params (remat_pfr_ensemble)."},
    {"pfr_reactor", (PyCFunction)(void (*)(void))pfr_reactor, METH_VARARGS | METH_KEYWORDS,
     "A reactor whose programs are compiled once (remat_pfr_new)."},
    {"pfr_adam", (PyCFunction)(void (*)(void))pfr_adam, METH_VARARGS | METH_KEYWORDS,
     "Adam on the reactor's objective (remat_pfr_adam)."},
    {NULL, NULL, 0, NULL},
};
