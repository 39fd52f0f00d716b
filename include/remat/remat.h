/*
 * remat/remat.h — umbrella header.
 *
 * remat differentiates long computations in reverse mode under a memory
 * budget: a graph IR (graph.h) with source-to-source reverse mode,
 * checkpoint regions and JAX-style save policies (ad.h), checkpoint schedules
 * for loops (schedule.h), compiled and run on a backend (exec.h).
 *
 *   #include <remat/remat.h>
 *
 *   remat_fn *f = remat_fn_new("f");
 *   remat_val x = remat_arg(f, "x", REMAT_F64, 1, ((int64_t[]){3}));
 *   remat_fn_output(f, remat_sum_all(f, remat_sin(f, x)));
 *   remat_fn *df;
 *   remat_grad(f, 0, NULL, &df);                  // d/dx sum(sin x) = cos x
 *   remat_program *p;
 *   remat_compile(df, remat_backend_cpu(), &p);
 *   double xv[3] = {0, 1, 2}, gv[3];
 *   remat_tensor in = remat_tensor_f64(xv, 1, (int64_t[]){3});
 *   remat_tensor out = remat_tensor_f64(gv, 1, (int64_t[]){3});
 *   remat_run(p, 1, &in, 1, &out, NULL);
 */
#ifndef REMAT_REMAT_H
#define REMAT_REMAT_H

#include "status.h"
#include "tensor.h"
#include "op.h"
#include "graph.h"
#include "ad.h"
#include "exec.h"
#include "schedule.h"
#include "scan.h"
#include "loop.h"
#include "problems.h"
#include "kinetics.h"
#include "gas.h"
#include "ode.h"
#include "optim.h"
#include "nn_data.h"
#include "nn.h"
#include "nn_train.h"
#include "fit.h"
#include "pfr.h"
#include "random.h"
#include "dist.h"
#include "dist_device.h"

#endif
