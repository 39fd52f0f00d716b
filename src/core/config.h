/*
 * config.h — the one place the environment is read for the compile-time
 * knobs (remat_compile_options, remat/exec.h has the table of variables).
 */
#ifndef REMAT_CORE_CONFIG_H
#define REMAT_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "remat/exec.h"

/* A flag variable: set to anything but "" and "0". */
bool rmi_env_flag(const char *name);
/* REMAT_NUM_THREADS when it is a count in [1, max], else 0 (a set but bad
 * value is named once on stderr: it comes from the environment, not from a
 * call that could return a status). */
int rmi_env_num_threads(int max);
/* The default cache directory ($XDG_CACHE_HOME/remat, else
 * $HOME/.cache/remat) into dir; false when neither is set or it does not fit. */
/* The slow snapshot tier's default directory: $TMPDIR, else /tmp. */
const char *rmi_default_tier_dir(void);
bool rmi_default_cache_dir(char *dir, size_t cap);
/* REMAT_OK, or REMAT_ERR_VALUE naming the first field out of its range. */
remat_status rmi_compile_options_check(const remat_compile_options *o);

#endif
