/*
 * graph.h — what the graph files of remat._remat share (graph.c, the module
 * part; graph_args.c, the builders' arguments; graph_fn.c, the Fn type;
 * graph_scan.c, Fn.scan and policies; graph_transforms.c; graph_program.c,
 * compile and the Program type). The rest of the module sees pyremat.h's
 * rp_graph_init, rp_policy_of, rp_wrap_fn and rp_fn_of only.
 */
#ifndef PYREMAT_GRAPH_H
#define PYREMAT_GRAPH_H

#include "pyremat.h"

typedef struct {
    PyObject_HEAD
    remat_fn *f;
} rp_fn;

#define FN(self) (((rp_fn *)(self))->f)

extern PyTypeObject rp_fn_type;      /* graph_fn.c */
extern PyTypeObject rp_program_type; /* graph_program.c */
extern PyMethodDef rp_graph_transform_functions[]; /* graph_transforms.c */
extern PyMethodDef rp_graph_program_functions[];   /* graph_program.c: compile */

/* ---- graph_args.c ---- */
int rp_graph_args_init(void);
/* (file, line) or None into *loc (the file name kept alive); 0 with an exception */
int rp_get_loc(PyObject *obj, remat_loc *loc);
/* "float64"/"f64", "float32"/"f32"; 0 with remat.DtypeError */
int rp_get_dtype(const char *s, remat_dtype *dt);
/* A sequence of ints into out[<= REMAT_MAX_RANK]; returns the count or -1. */
int rp_ints64(PyObject *obj, const char *what, int64_t *out);
int rp_ints32(PyObject *obj, const char *what, int *out);
/* A sequence of value handles (PyMem_Malloc'd array, *n its length). */
remat_val *rp_vals_in(PyObject *obj, const char *what, int *n);
PyObject *rp_vals_out(const remat_val *v, int n);
/* The build error the function recorded (cleared, so that the function can
 * go on), as an exception; NULL. */
PyObject *rp_build_error(remat_fn *f);
/* v as a Python int, or f's build error */
PyObject *rp_val_result(remat_fn *f, remat_val v);

/* ---- graph_scan.c ---- */
PyObject *rp_fn_scan(PyObject *self, PyObject *args);

#endif
