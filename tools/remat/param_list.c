/* param_list.c — --fix / --free lists of parameter names (param_list.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "param_list.h"
#include "pfr_cli.h"

int param_list_set(const char *opt, const char *text, const remat_mechanism *m, bool value, bool *flags)
{
    int n = remat_mechanism_param_count(m), ok = 1;
    char names[1024];
    pfr_cli_names(m, 1, names, sizeof names);
    char *seen = calloc((size_t)n + 1, 1), *copy = strdup(text);
    if (!seen || !copy) {
        fprintf(stderr, "remat: %s: out of memory\n", opt);
        ok = 0;
    }
    for (char *p = copy; ok;) {
        char *item = p, *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        int i = remat_mechanism_param_find(m, item);
        if (!*item) {
            fprintf(stderr, "remat: %s: '%s': an empty name (expected NAME,NAME,... of: %s)\n", opt, text, names);
            ok = 0;
        } else if (i < 0) {
            if (remat_mechanism_species_find(m, item) >= 0)
                fprintf(stderr, "remat: %s: '%s' is a species of %s, not a parameter (parameters: %s)\n", opt, item,
                        remat_mechanism_source(m), names);
            else
                fprintf(stderr, "remat: %s: '%s' is not a parameter of %s (parameters: %s)\n", opt, item,
                        remat_mechanism_source(m), names);
            ok = 0;
        } else if (seen[i]) {
            fprintf(stderr, "remat: %s: '%s' is given twice\n", opt, item);
            ok = 0;
        } else {
            seen[i] = 1;
            flags[i] = value;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    free(seen);
    free(copy);
    return ok;
}

int param_list_fixed(const char *fix_text, const char *free_text, const remat_mechanism *m, bool *fixed)
{
    int n = remat_mechanism_param_count(m);
    if (fix_text && free_text) {
        fprintf(stderr, "remat: --fix and --free exclude each other (give the parameters to keep, or those to vary)\n");
        return 0;
    }
    for (int i = 0; i < n; i++)
        fixed[i] = free_text != NULL;
    if (fix_text)
        return param_list_set("--fix", fix_text, m, true, fixed);
    if (free_text)
        return param_list_set("--free", free_text, m, false, fixed);
    return 1;
}
