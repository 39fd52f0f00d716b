/* plot_none.c — the tool was built without PLplot: --plot says so. */
#include "cli.h"

int cli_plot(const char *path, const char *title, const char *xlabel, const char *ylabel, int logx, int logy,
             int n_series, const cli_series *series)
{
    (void)title, (void)xlabel, (void)ylabel, (void)logx, (void)logy, (void)n_series, (void)series;
    fprintf(stderr, "remat: --plot %s: this remat was built without PLplot (install libplplot-dev and "
                    "plplot-driver-cairo, then rebuild)\n", path);
    return 0;
}

int cli_plot_panels(const char *path, int n_panels, const cli_panel *panels)
{
    (void)n_panels, (void)panels;
    return cli_plot(path, NULL, NULL, NULL, 0, 0, 0, NULL);
}

int cli_plot_check(const char *path)
{
    return cli_plot(path, NULL, NULL, NULL, 0, 0, 0, NULL);
}

int cli_plot_check_for(const char *opt, const char *path)
{
    (void)opt;
    return cli_plot_check(path);
}

int cli_plot_panels_for(const char *opt, const char *path, int n_panels, const cli_panel *panels)
{
    (void)opt;
    return cli_plot_panels(path, n_panels, panels);
}
