/* gas_ck.c — CHEMKIN-II input into a gas description (placeholder until the reader lands). */
#include "models/kinetics/gas_impl.h"

remat_status gas_read_chemkin(gas_desc *d, const char *text, size_t n, const char *thermo_file, const char *thermo,
                              size_t nthermo)
{
    (void)text, (void)n, (void)thermo_file, (void)thermo, (void)nthermo;
    return gas_error(d->file, 1, "CHEMKIN input is not read yet");
}
