/*
 * data_dir.h — where the remat tool finds the data it ships (data/ of the
 * source tree, installed as <datadir>/remat): the default of
 * `remat mlp train --data`.
 */
#ifndef REMAT_TOOL_DATA_DIR_H
#define REMAT_TOOL_DATA_DIR_H

/* The shipped digits CSV (digits/digits.csv), or NULL when the binary knows
 * no data directory. Run from its build tree, the binary answers the source
 * tree's data/ (the tests); installed, <its bindir>/<bindir to datadir>/remat,
 * so a moved prefix still finds its own; else the datadir it was installed
 * for. The answer is computed once. */
const char *tool_digits_path(void);

#endif
