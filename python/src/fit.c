/* fit.c — least-squares fits (remat/fit.h) from Python. The experiments
 * arrive as CSV paths (remat/kinetics.py writes a temporary file for one
 * given as columns); the fit runs without the GIL, and its progress callback
 * takes the GIL back once per iteration to run Python's signal handlers
 * (Ctrl-C: KeyboardInterrupt stops the fit there) and the caller's callback. */
#include "pyremat.h"

#include <math.h>
#include <string.h>

typedef struct {
    PyObject *callback; /* None or callable(progress dict) -> truthy to stop */
    PyObject *exc;      /* the exception that stopped the fit (a new reference) */
    int stopped;        /* the callback asked to stop */
} progress_ctx;

static PyObject *progress_dict(const remat_fit_progress *p)
{
    npy_intp P = p->n_params;
    PyArrayObject *params = rp_f64_new(1, &P);
    PyObject *names = PyTuple_New(P);
    if (!params || !names) {
        Py_XDECREF(params);
        Py_XDECREF(names);
        return NULL;
    }
    memcpy(PyArray_DATA(params), p->params, sizeof(double) * (size_t)P);
    for (npy_intp i = 0; i < P; i++) {
        PyObject *s = PyUnicode_FromString(p->param_names[i]);
        if (!s) {
            Py_DECREF(params);
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    return Py_BuildValue("{s:i,s:d,s:d,s:N,s:N,s:s}", "iteration", p->iteration, "objective", p->objective,
                         "grad_norm", p->grad_norm, "params", params, "param_names", names, "optimizer", p->optimizer);
}

static int on_progress(const remat_fit_progress *p, void *vctx)
{
    progress_ctx *c = vctx;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = 0;
    if (PyErr_CheckSignals() < 0) {
        stop = 1;
    } else if (c->callback != Py_None) {
        PyObject *d = progress_dict(p), *r = d ? PyObject_CallOneArg(c->callback, d) : NULL;
        Py_XDECREF(d);
        if (!r) {
            stop = 1;
        } else {
            int t = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (t != 0) {
                stop = 1;
                c->stopped = t > 0;
            }
        }
    }
    if (PyErr_Occurred() && !c->exc) { /* kept for the caller, traceback included */
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        if (v && tb)
            PyException_SetTraceback(v, tb);
        Py_XDECREF(t);
        Py_XDECREF(tb);
        c->exc = v;
    }
    PyErr_Clear();
    PyGILState_Release(g);
    return stop;
}

/* obj None -> NULL; else count strings parsed into enums by parse(). */
static int names_in(PyObject *obj, const char *what, Py_ssize_t count, int *out,
                    int (*parse)(const char *text, int *v))
{
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq)
        return 0;
    int ok = 1;
    if (PySequence_Fast_GET_SIZE(seq) != count) {
        rp_raise_msg(REMAT_ERR_SHAPE, "%s: %zd entries, expected %zd", what, PySequence_Fast_GET_SIZE(seq), count);
        ok = 0;
    }
    for (Py_ssize_t i = 0; ok && i < count; i++) {
        const char *s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
        if (!s || !parse(s, &out[i])) {
            if (!PyErr_Occurred())
                rp_raise_msg(REMAT_ERR_ARG, "%s: entry %zd: '%s' is not one of auto, log, linear", what, i, s);
            ok = 0;
        }
    }
    Py_DECREF(seq);
    return ok;
}

static int parse_scale(const char *s, int *v)
{
    if (!strcmp(s, "auto"))
        *v = REMAT_FIT_SCALE_AUTO;
    else if (!strcmp(s, "log"))
        *v = REMAT_FIT_SCALE_LOG;
    else if (!strcmp(s, "linear"))
        *v = REMAT_FIT_SCALE_LINEAR;
    else
        return 0;
    return 1;
}

static PyObject *f64_copy(const double *d, int ndim, const npy_intp *shape)
{
    PyArrayObject *a = rp_f64_new(ndim, shape);
    if (a && d)
        memcpy(PyArray_DATA(a), d, sizeof(double) * (size_t)PyArray_SIZE(a));
    return (PyObject *)a;
}

static PyObject *stats_dict(remat_fit *fit, const double *params, int P)
{
    remat_fit_stats s = {0};
    remat_status st;
    Py_BEGIN_ALLOW_THREADS
    st = remat_fit_statistics(fit, params, &s);
    Py_END_ALLOW_THREADS
    if (st != REMAT_OK) { /* dof < 1 or a non-finite Jacobian: the fit stands, its statistics do not */
        const char *msg = remat_last_error();
        PyObject *r = Py_BuildValue("{s:s,s:s}", "error", msg, "status", remat_status_name(st));
        remat_clear_error();
        return r;
    }
    npy_intp n = P, nn[2] = {P, P};
    PyObject *cov = f64_copy(s.corr, 2, nn), *unid = PyList_New(0);
    if (cov) {
        double *c = PyArray_DATA((PyArrayObject *)cov);
        for (int i = 0; i < P; i++)
            for (int j = 0; j < P; j++)
                c[i * P + j] *= s.se[i] * s.se[j];
    }
    for (int i = 0; unid && i < P; i++)
        if (s.unidentifiable && s.unidentifiable[i]) {
            PyObject *v = PyLong_FromLong(i);
            if (!v || PyList_Append(unid, v) < 0)
                Py_CLEAR(unid);
            Py_XDECREF(v);
        }
    PyObject *r = cov && unid ? Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:N,s:i,s:L,s:L,s:d,s:d,s:d,s:d}",
        "se", f64_copy(s.se, 1, &n), "ci_lo", f64_copy(s.ci_lo, 1, &n), "ci_hi", f64_copy(s.ci_hi, 1, &n),
        "correlation", f64_copy(s.corr, 2, nn), "covariance", cov, "unidentifiable", unid, "n_free", s.n_free,
        "n_residuals", (long long)s.n_residuals, "dof", (long long)s.dof, "sse", s.sse, "s2", s.s2, "t95", s.t95,
        "cond", s.cond) : NULL;
    if (!r) {
        Py_XDECREF(cov);
        Py_XDECREF(unid);
    }
    remat_fit_stats_clear(&s);
    return r;
}

/* residuals (N,) and per experiment (times, model at the times) at params. */
static PyObject *model_at(remat_fit *fit, remat_dataset **data, int n_data, const double *params, int S,
                          PyObject **fitted)
{
    npy_intp N = remat_fit_residual_count(fit);
    PyArrayObject *res = rp_f64_new(1, &N);
    *fitted = PyList_New(n_data);
    if (!res || !*fitted)
        goto fail;
    remat_status st;
    Py_BEGIN_ALLOW_THREADS
    st = remat_fit_residuals(fit, params, PyArray_DATA(res));
    Py_END_ALLOW_THREADS
    if (st != REMAT_OK) {
        rp_raise(st);
        goto fail;
    }
    for (int e = 0; e < n_data; e++) {
        npy_intp rows = (npy_intp)remat_dataset_rows(data[e]), shape[2] = {rows, S};
        PyObject *t = f64_copy(remat_dataset_times(data[e]), 1, &rows);
        PyArrayObject *y = rp_f64_new(2, shape);
        if (t && y) {
            Py_BEGIN_ALLOW_THREADS
            st = remat_fit_predict(fit, e, params, (int)rows, PyArray_DATA((PyArrayObject *)t), PyArray_DATA(y));
            Py_END_ALLOW_THREADS
            if (st != REMAT_OK)
                rp_raise(st);
        }
        PyObject *pair = t && y && st == REMAT_OK ? PyTuple_Pack(2, t, (PyObject *)y) : NULL;
        Py_XDECREF(t);
        Py_XDECREF(y);
        if (!pair)
            goto fail;
        PyList_SET_ITEM(*fitted, e, pair);
    }
    return (PyObject *)res;
fail:
    Py_XDECREF(res);
    Py_CLEAR(*fitted);
    return NULL;
}

static PyObject *result_dict(const remat_fit_result *r, PyObject *stats, PyObject *residuals, PyObject *fitted,
                             const progress_ctx *c)
{
    npy_intp P = r->n_params, H = r->n_history, hp[2] = {H, P}, ns = r->n_starts;
    PyObject *names = PyList_New(P);
    for (npy_intp i = 0; names && i < P; i++) {
        PyObject *s = PyUnicode_FromString(r->param_names[i]);
        if (!s)
            Py_CLEAR(names);
        else
            PyList_SET_ITEM(names, i, s);
    }
    if (!names)
        return NULL;
    return Py_BuildValue("{s:d,s:N,s:N,s:i,s:L,s:O,s:s,s:s,s:z,s:L,s:N,s:N,s:i,s:i,s:i,s:N,s:O,s:O,s:O,s:O,s:O}",
        "objective", r->objective, "params", f64_copy(r->params, 1, &P), "param_names", names, "iterations",
        r->iterations, "evaluations", (long long)r->evaluations, "converged", r->converged ? Py_True : Py_False,
        "message", r->message, "optimizer", r->optimizer ? r->optimizer : "", "jacobian", r->jacobian,
        "n_residuals", (long long)r->n_residuals, "history_objective", f64_copy(r->history_objective, 1, &H),
        "history_params", f64_copy(r->history_params, 2, hp), "n_starts", r->n_starts, "starts_at_best",
        r->starts_at_best, "starts_failed", r->starts_failed, "start_objectives", f64_copy(r->start_objectives, 1, &ns),
        "statistics", stats ? stats : Py_None, "residuals", residuals ? residuals : Py_None, "fitted",
        fitted ? fitted : Py_None, "exception", c->exc ? c->exc : Py_None, "stopped",
        c->stopped ? Py_True : Py_False);
}

static PyObject *fit_run(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"mechanism", "data", "optimizer", "method", "adaptive", "dt", "steps", "rtol", "atol",
                          "max_steps", "t0", "schedule", "memory_budget", "y0", "start", "fixed", "scale",
                          "max_iters", "lr", "xtol", "gtol", "ftol", "starts", "seed", "sigma", "weighting",
                          "jacobian", "lm_more_scaling", "callback", "statistics", NULL};
    PyObject *mech_obj, *paths, *y0_obj = Py_None, *start_obj = Py_None, *fixed_obj = Py_None;
    PyObject *scale_obj = Py_None, *sigma_obj = Py_None, *callback = Py_None;
    const char *optimizer = "auto", *method = "tsit5", *schedule = NULL, *weighting = "none", *jacobian = "auto";
    int adaptive = 1, max_iters = 0, starts = 0, more = 0, want_stats = 1;
    double dt = 0, rtol = REMAT_FIT_DEFAULT_RTOL, atol = REMAT_FIT_DEFAULT_ATOL, t0 = 0, lr = 0, xtol = 0, gtol = 0,
           ftol = 0;
    long long steps = 0, max_steps = 0, budget = 0;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sspdLddLdzLOOOOiddddiKOsspOp:fit", kws, &mech_obj, &paths,
                                     &optimizer, &method, &adaptive, &dt, &steps, &rtol, &atol, &max_steps, &t0,
                                     &schedule, &budget, &y0_obj, &start_obj, &fixed_obj, &scale_obj, &max_iters,
                                     &lr, &xtol, &gtol, &ftol, &starts, &seed, &sigma_obj, &weighting, &jacobian,
                                     &more, &callback, &want_stats))
        return NULL;
    if (callback != Py_None && !PyCallable_Check(callback))
        return rp_raise_msg(REMAT_ERR_ARG, "callback: expected a callable or None, got %s", Py_TYPE(callback)->tp_name);
    remat_mechanism *m = rp_mechanism_of(mech_obj, "mechanism");
    if (!m)
        return NULL;
    int S = remat_mechanism_species_count(m), P = remat_mechanism_param_count(m);
    npy_intp nS = S, nP = P;
    PyObject *seq = PySequence_Fast(paths, "data: expected a sequence of CSV paths"), *res = NULL;
    if (!seq)
        return NULL;
    Py_ssize_t n_data = PySequence_Fast_GET_SIZE(seq);
    remat_dataset **data = PyMem_Calloc((size_t)n_data + 1, sizeof *data);
    PyArrayObject **y0a = PyMem_Calloc((size_t)n_data + 1, sizeof *y0a);
    const double **y0 = PyMem_Calloc((size_t)n_data + 1, sizeof *y0);
    bool *fixed = PyMem_Calloc((size_t)P + 1, sizeof *fixed);
    int *scale_i = PyMem_Calloc((size_t)P + 1, sizeof *scale_i);
    remat_fit_scale *scale = PyMem_Calloc((size_t)P + 1, sizeof *scale);
    PyArrayObject *start = NULL, *sigma = NULL;
    PyObject *stats = NULL, *residuals = NULL, *fitted = NULL;
    remat_fit *fit = NULL;
    remat_fit_result r = {0};
    progress_ctx ctx = {.callback = callback};
    remat_status st;
    if (!data || !y0a || !y0 || !fixed || !scale_i || !scale) {
        PyErr_NoMemory();
        goto done;
    }
    if (n_data < 1) {
        rp_raise_msg(REMAT_ERR_ARG, "experiments: at least one is required");
        goto done;
    }
    for (Py_ssize_t e = 0; e < n_data; e++) {
        PyObject *b;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, e), &b))
            goto done;
        st = remat_dataset_read(PyBytes_AS_STRING(b), m, &data[e]);
        Py_DECREF(b);
        if (st != REMAT_OK) {
            rp_raise(st);
            goto done;
        }
    }
    remat_fit_options o = remat_fit_defaults();
    if ((st = remat_fit_optimizer_parse(optimizer, &o.optimizer)) != REMAT_OK ||
        (st = remat_ode_method_parse(method, &o.method)) != REMAT_OK ||
        (st = remat_fit_jacobian_parse(jacobian, &o.jacobian)) != REMAT_OK ||
        (schedule && (st = remat_schedule_parse(schedule, &o.scan.schedule)) != REMAT_OK)) {
        rp_raise(st);
        goto done;
    }
    if (!strcmp(weighting, "relative"))
        o.weighting = REMAT_FIT_WEIGHT_RELATIVE;
    else if (strcmp(weighting, "none")) {
        rp_raise_msg(REMAT_ERR_ARG, "weighting: '%s' is not none or relative", weighting);
        goto done;
    }
    o.adaptive = adaptive;
    o.dt = dt;
    o.steps = steps;
    o.rtol = rtol;
    o.atol = atol;
    o.max_steps = max_steps;
    o.t0 = t0;
    o.memory_budget = budget;
    o.max_iters = max_iters;
    o.lr = lr;
    o.xtol = xtol;
    o.gtol = gtol;
    o.ftol = ftol;
    o.starts = starts;
    o.seed = seed;
    o.lm_more_scaling = more;
    o.progress = on_progress;
    o.progress_ctx = &ctx;
    if (y0_obj != Py_None) {
        PyObject *ys = PySequence_Fast(y0_obj, "y0: expected a sequence with one entry (None or an array) per experiment");
        if (!ys)
            goto done;
        int ok = PySequence_Fast_GET_SIZE(ys) == n_data;
        if (!ok)
            rp_raise_msg(REMAT_ERR_SHAPE, "y0: %zd entries for %zd experiments", PySequence_Fast_GET_SIZE(ys), n_data);
        for (Py_ssize_t e = 0; ok && e < n_data; e++) {
            PyObject *it = PySequence_Fast_GET_ITEM(ys, e);
            if (it == Py_None)
                continue;
            ok = (y0a[e] = rp_f64_in(it, "y0", 1, &nS, 1)) != NULL;
            if (ok)
                y0[e] = PyArray_DATA(y0a[e]);
        }
        Py_DECREF(ys);
        if (!ok)
            goto done;
        o.y0 = y0;
    }
    if (start_obj != Py_None) {
        if (!(start = rp_f64_in(start_obj, "start", 1, &nP, 1)))
            goto done;
        o.start = PyArray_DATA(start);
    }
    if (sigma_obj != Py_None) {
        if (!(sigma = rp_f64_in(sigma_obj, "sigma", 1, &nS, 1)))
            goto done;
        o.sigma = PyArray_DATA(sigma);
    }
    if (fixed_obj != Py_None) {
        PyObject *fs = PySequence_Fast(fixed_obj, "fixed: expected a sequence of booleans");
        if (!fs)
            goto done;
        int ok = PySequence_Fast_GET_SIZE(fs) == P;
        if (!ok)
            rp_raise_msg(REMAT_ERR_SHAPE, "fixed: %zd entries for %d parameters", PySequence_Fast_GET_SIZE(fs), P);
        for (int i = 0; ok && i < P; i++) {
            int t = PyObject_IsTrue(PySequence_Fast_GET_ITEM(fs, i));
            ok = t >= 0;
            fixed[i] = t > 0;
        }
        Py_DECREF(fs);
        if (!ok)
            goto done;
        o.fixed = fixed;
    }
    if (scale_obj != Py_None) {
        if (!names_in(scale_obj, "scale", P, scale_i, parse_scale))
            goto done;
        for (int i = 0; i < P; i++)
            scale[i] = (remat_fit_scale)scale_i[i];
        o.scale = scale;
    }
    Py_BEGIN_ALLOW_THREADS
    st = remat_fit_new(m, (int)n_data, data, &o, &fit);
    if (st == REMAT_OK)
        st = remat_fit_run(fit, &r);
    Py_END_ALLOW_THREADS
    if (st != REMAT_OK && !ctx.exc) {
        rp_raise(st);
        goto done;
    }
    if (!ctx.exc) {
        if (want_stats && !(stats = stats_dict(fit, r.params, P)))
            goto done;
        if (!(residuals = model_at(fit, data, (int)n_data, r.params, S, &fitted)))
            goto done;
    }
    res = result_dict(&r, stats, residuals, fitted, &ctx);
done:
    remat_fit_result_clear(&r);
    remat_fit_free(fit);
    for (Py_ssize_t e = 0; data && e < n_data; e++)
        remat_dataset_free(data[e]);
    for (Py_ssize_t e = 0; y0a && e < n_data; e++)
        Py_XDECREF(y0a[e]);
    PyMem_Free(data);
    PyMem_Free(y0a);
    PyMem_Free(y0);
    PyMem_Free(fixed);
    PyMem_Free(scale_i);
    PyMem_Free(scale);
    Py_XDECREF(start);
    Py_XDECREF(sigma);
    Py_XDECREF(stats);
    Py_XDECREF(residuals);
    Py_XDECREF(fitted);
    Py_XDECREF(ctx.exc);
    Py_DECREF(seq);
    return res;
}

PyMethodDef rp_fit_functions[] = {
    {"fit", (PyCFunction)(void (*)(void))fit_run, METH_VARARGS | METH_KEYWORDS,
     "Least-squares fit of a mechanism to CSV experiments (remat/fit.h); returns a dict."},
    {NULL, NULL, 0, NULL},
};
