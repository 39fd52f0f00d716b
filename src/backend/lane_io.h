/*
 * lane_io.h (internal) — lane programs (backend/lane.h) as text, and the
 * REMAT_DUMP_LANES hook that writes every program a scan hands a backend.
 *
 * One program per file, one record per line, every number exact (imm as a
 * C99 hex float):
 *
 *   remat-lanes 1
 *   m <lanes> bufs <n_bufs> ins <n_ins>
 *   b <dtype> <state>                                  (n_bufs lines)
 *   i <kind> <dtype> <op> <post> <a> <b> <c> <buf> <off> <lstride> <imm>
 *
 * The reader checks what the compilers rely on (kinds, dtypes, ops in
 * range, operands defined earlier, buffers in range) and names the line of
 * the first thing wrong. Why: a backend's compiler (the CUDA one, in CI
 * without a device) can then be run over every program the CPU test suites
 * translate — `REMAT_DUMP_LANES=dir` at scan compile time writes them as
 * dir/lanes-<hash of the text>.txt,
 * one file per distinct program.
 */
#ifndef REMAT_BACKEND_LANE_IO_H
#define REMAT_BACKEND_LANE_IO_H

#include <stdio.h>

#include "backend/lane.h"

remat_status rmi_lane_program_write(FILE *f, const remat_lane_program *p);

/* *p gets instructions and buffers of its own, released by
 * rmi_lane_program_release (also on a half-read program). REMAT_ERR_PARSE
 * with a message naming the line, REMAT_ERR_NOMEM. */
remat_status rmi_lane_program_read(FILE *f, remat_lane_program *p);
void rmi_lane_program_release(remat_lane_program *p);

/* With REMAT_DUMP_LANES=dir in the environment: writes the n programs to
 * dir, one file per distinct text (best effort: a dump that fails says so on
 * stderr once and changes nothing else). */
void rmi_lane_dump(int n, const remat_lane_program *const *p);

#endif
