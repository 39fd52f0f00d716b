/*
 * fuzz_dataset.c — a measured-data CSV (remat/dataset.h) from the fuzzer's
 * bytes, read against a fixed mechanism (species A, B, C and a condition T;
 * the header names its columns, '# NAME = VALUE' lines set T and initial
 * values), then every accessor over what was read.
 */
#include "fuzz.h"
#include "remat/dataset.h"
#include "remat/mechanism.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static remat_mechanism *m;
    if (!m && remat_mechanism_parse_string("param k1 = 1\nparam k2 = 0.5\ncond T = 300\nA -> B : k1\nB -> C : k2\n", "fuzz.mech",
                                           &m) != REMAT_OK)
        return 0;
    const char *path = fuzz_as_file(data, size);
    remat_dataset *d = NULL;
    if (!path || remat_dataset_read(path, m, &d) != REMAT_OK)
        return 0;
    volatile double sink = 0;
    size_t rows = remat_dataset_rows(d);
    int S = remat_dataset_species_count(d);
    for (size_t r = 0; r < rows; r++) {
        sink += remat_dataset_times(d)[r];
        for (int s = 0; s < S; s++)
            if (remat_dataset_is_measured(d, r, s))
                sink += remat_dataset_value(d, r, s);
    }
    for (int s = 0; s < S; s++)
        sink += remat_dataset_has_column(d, s) + remat_dataset_initial(d, s) + remat_dataset_setting_line(d, s, 1);
    sink += remat_dataset_cond(d, 0) + remat_dataset_setting_line(d, 0, 0);
    sink += remat_dataset_initial_complete(d);
    (void)sink;
    remat_dataset_free(d);
    return 0;
}
