/* plot_plplot.c — plots through PLplot (pngcairo / svg / pdfcairo / ps by file extension). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "plot_lib.h"

static const char *device_for(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot)
        return NULL;
    if (!strcmp(dot, ".png"))
        return "pngcairo";
    if (!strcmp(dot, ".svg"))
        return "svg";
    if (!strcmp(dot, ".pdf"))
        return "pdfcairo";
    if (!strcmp(dot, ".ps"))
        return "psc";
    return NULL;
}

/* the option the messages name: "--plot" unless a *_for entry says otherwise
 * (the tool is single-threaded; each entry point sets it) */
static const char *plot_opt = "--plot";

int cli_plot_check(const char *path) { return cli_plot_check_for("--plot", path); }

int cli_plot_check_for(const char *opt, const char *path)
{
    plot_opt = opt;
    if (!device_for(path)) {
        fprintf(stderr, "remat: %s: '%s': unknown file type (use .png, .svg, .pdf or .ps)\n", plot_opt, path);
        return 0;
    }
    /* the plot is drawn last: find out now that its directory takes a file,
     * and that PLplot loads */
    return cli_out_check(plot_opt, path) && plot_lib_open(plot_opt);
}

/* A value on its axis: log10 on a log axis, where a value <= 0 has no place
 * (NaN: the point is left out, so a curve from z = 0 does not stretch the
 * axis down to 1e-300) */
static double tr(double v, int lg) { return lg ? (v > 0 ? log10(v) : NAN) : v; }

#define MARKED_POINTS 50 /* curves with more points are drawn without markers */
#define MAX_LEGEND 16

static int color_of(const cli_series *S, int position) { return S->color > 0 ? S->color - 1 : position; }

/* Matplotlib's tab10, its first five in the order the plots had them: ten
 * colours, then the same ten dashed, and so on (PLplot's line styles 1..8),
 * so that every curve of a legend up to 80 is told apart (a palette of five
 * drew H2 and H2O of h2o2.yaml in one colour). */
static const int palette[][3] = {{31, 119, 180}, {214, 39, 40},  {44, 160, 44},   {148, 103, 189}, {255, 127, 14},
                                 {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34},  {23, 190, 207}};
#define N_COLORS ((int)(sizeof palette / sizeof palette[0]))
static int pen_color(int c) { return 2 + c % N_COLORS; }       /* cmap0 entries 2 .. 11 */
static int pen_style(int c) { return 1 + (c / N_COLORS) % 8; } /* solid, then dashes */

/* A legend when there are several labelled curves (labelled single points
 * carry their label beside them; one curve is named by the axis label). */
static void legend(int n_series, const cli_series *series)
{
    PLINT opt[MAX_LEGEND], colors[MAX_LEGEND], styles[MAX_LEGEND];
    PLFLT widths[MAX_LEGEND];
    const char *text[MAX_LEGEND];
    int n = 0;
    for (int s = 0; s < n_series && n < MAX_LEGEND; s++) {
        const cli_series *S = &series[s];
        if (S->points_only || !S->label)
            continue;
        opt[n] = PL_LEGEND_LINE;
        colors[n] = pen_color(color_of(S, s));
        styles[n] = pen_style(color_of(S, s));
        widths[n] = 2.0;
        text[n] = S->label;
        n++;
    }
    if (n < 2)
        return;
    PLFLT w, h;
    plcol0(1);
    pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, PL_POSITION_RIGHT | PL_POSITION_TOP, 0.02, 0.02,
             0.08, 0, 1, 1, 0, 0, n, opt, 1.0, 1.0, 2.0, 0.0, colors, text, NULL, NULL, NULL, NULL, colors, styles,
             widths, NULL, NULL, NULL, NULL);
}

/* PLplot's 'l' axes label the decades only: an axis of one or two decades
 * would carry two or three labels, so its 2 x 10^k and 5 x 10^k get labels
 * too, written beside the axis where PLplot writes its own (side "b" or "l"
 * of plmtex; lo, hi the axis's log10 range). */
static void log_minor_labels(const char *side, double lo, double hi)
{
    if (hi - lo > 2 + 1e-9)
        return;
    for (double k = floor(lo); k < hi; k++)
        for (int m = 2; m <= 5; m += 3) {
            double v = k + log10((double)m);
            if (v <= lo || v >= hi)
                continue;
            char text[48];
            snprintf(text, sizeof text, "%d\u00d710#u%d#d", m, (int)k);
            if (side[0] == 'b')
                plmtex("b", 1.5, (v - lo) / (hi - lo), 0.5, text);
            else
                plmtex("lv", 0.7, (v - lo) / (hi - lo), 1.0, text);
        }
}

/* A log axis labels at most this many decades: past it, every k-th (the
 * multiples of k), the others keeping their major and minor ticks (an
 * axis over 11 decades wrote 10^-10 over 10^-11). */
#define MAX_LABELLED_DECADES 6

/* The decades lo..hi (log10, whole) labelled every k-th: the least k whose
 * multiples in lo..hi number MAX_LABELLED_DECADES at most. */
static int decade_step(double lo, double hi)
{
    int k = 1;
    while (floor(hi / k) - ceil(lo / k) + 1 > MAX_LABELLED_DECADES)
        k++;
    return k;
}

/* PLplot's custom labels (plslabelfunc, the 'o' of plbox): data holds each
 * axis's step k; a decade off the multiples of k gets no text. */
static void decade_label(PLINT axis, PLFLT value, char *text, PLINT length, PLPointer data)
{
    const int *step = data;
    int e = (int)lround(value), k = step[axis == PL_Y_AXIS];
    if (e % k == 0)
        snprintf(text, (size_t)length, "10#u%d", e);
    else
        text[0] = '\0';
}

/* The frame plenv(..., axis) draws, its decades on a log axis labelled
 * every k-th (decade_step); linear axes as plenv's 0. */
static void frame(double x0, double x1, double y0, double y1, int logx, int logy)
{
    static int step[2]; /* x, y: read by decade_label while plbox runs */
    step[0] = logx ? decade_step(x0, x1) : 1;
    step[1] = logy ? decade_step(y0, y1) : 1;
    char xopt[16], yopt[16];
    snprintf(xopt, sizeof xopt, "bcnst%s%s", logx ? "l" : "", step[0] > 1 ? "o" : "");
    snprintf(yopt, sizeof yopt, "bcnstv%s%s", logy ? "l" : "", step[1] > 1 ? "o" : "");
    plslabelfunc(decade_label, step);
    plbox(xopt, 0, 0, yopt, 0, 0);
    plslabelfunc(NULL, NULL);
}

/* One frame: ranges over its series, axes, curves and points, legend. 0 when it has no point. */
static int draw_panel(const char *title, const char *xlabel, const char *ylabel, int logx, int logy, int n_series,
                      const cli_series *series)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int s = 0; s < n_series; s++)
        for (int i = 0; i < series[s].n; i++) {
            double x = tr(series[s].x[i], logx), y = tr(series[s].y[i], logy);
            if (isfinite(x) && isfinite(y))
                x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
        }
    if (!(x0 <= x1) || !(y0 <= y1))
        return 0;
    double dx = (x1 - x0) * 0.08 + 1e-9, dy = (y1 - y0) * 0.08 + 1e-9;
    /* a log axis spans whole decades, so that at least two of them carry a
     * label (PLplot's 'l' axes label the decades only) */
    if (logx)
        x0 = floor(x0), x1 = fmax(ceil(x1), x0 + 1), dx = 0;
    if (logy)
        y0 = floor(y0), y1 = fmax(ceil(y1), y0 + 1), dy = 0;
    plcol0(1);
    plenv(x0 - dx, x1 + dx, y0 - dy, y1 + dy, 0, -2); /* the viewport and window: frame() draws the box */
    frame(x0 - dx, x1 + dx, y0 - dy, y1 + dy, logx, logy);
    pllab(xlabel, ylabel, title);
    if (logx)
        log_minor_labels("b", x0, x1);
    if (logy)
        log_minor_labels("l", y0, y1);
    for (int s = 0; s < n_series; s++) {
        const cli_series *S = &series[s];
        int c = color_of(S, s), k = c % N_COLORS;
        plscol0(pen_color(c), palette[k][0], palette[k][1], palette[k][2]);
        plcol0(pen_color(c));
        pllsty(pen_style(c));
        double *xs = malloc(sizeof *xs * (size_t)(S->n ? S->n : 1)), *ys = malloc(sizeof *ys * (size_t)(S->n ? S->n : 1));
        int n = 0; /* the points this frame's axes can show */
        for (int i = 0; i < S->n; i++) {
            double x = tr(S->x[i], logx), y = tr(S->y[i], logy);
            if (isfinite(x) && isfinite(y))
                xs[n] = x, ys[n] = y, n++;
        }
        if (!S->points_only && n > 1)
            plline(n, xs, ys);
        plssym(0, 1.6);
        if (n > 0 && (S->points_only || n <= MARKED_POINTS)) /* a long curve is a line, not a row of dots */
            plpoin(n, xs, ys, 17);
        if (n > 0 && S->points_only && S->label) { /* label the point, inside the frame */
            int right = xs[0] > (x0 + x1) / 2;
            plptex(xs[0] + (right ? -dx : dx) * 0.15, ys[0] + dy * 0.25 * (s % 2 ? -1 : 1), 1, 0, right ? 1.0 : 0.0,
                   S->label);
        }
        free(xs);
        free(ys);
    }
    pllsty(1);
    legend(n_series, series);
    return 1;
}

static int has_points(const cli_panel *p)
{
    for (int s = 0; s < p->n_series; s++)
        for (int i = 0; i < p->series[s].n; i++)
            if (isfinite(tr(p->series[s].x[i], p->logx)) && isfinite(tr(p->series[s].y[i], p->logy)))
                return 1;
    return 0;
}

/* The last bytes every complete file of the device ends with (before trailing
 * white space): a file cut short by a full disk or a size limit lacks them. */
static const char *trailer_of(const char *dev)
{
    if (!strcmp(dev, "pngcairo"))
        return "IEND\xAE\x42\x60\x82";
    if (!strcmp(dev, "svg"))
        return "</svg>";
    return "%%EOF"; /* pdfcairo, psc */
}

/* Why PLplot's writes to tmp failed: the file system's answer to one more
 * byte (ENOSPC, EFBIG, ...) — the condition that cut the file short is still
 * there. NULL when it takes the byte. */
static const char *write_error_at(const char *tmp)
{
    int fd = open(tmp, O_WRONLY | O_APPEND);
    if (fd < 0)
        return strerror(errno);
    const char *why = write(fd, "", 1) == 1 ? NULL : strerror(errno);
    close(fd);
    return why;
}

/* PLplot's file tmp, complete, into out (checked writes). 0 with a message. */
static int copy_rendered(const char *tmp, const char *dev, cli_out *out)
{
    FILE *f = fopen(tmp, "rb");
    if (!f) {
        fprintf(stderr, "remat: %s: cannot read PLplot's output '%s': %s\n", plot_opt, tmp, strerror(errno));
        return 0;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            unsigned char *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
        }
    }
    int read_err = ferror(f);
    fclose(f);
    if (!buf || read_err) {
        fprintf(stderr, "remat: %s: cannot read PLplot's output '%s'%s\n", plot_opt, tmp, buf ? "" : ": out of memory");
        free(buf);
        return 0;
    }
    const char *end = trailer_of(dev);
    size_t m = n, k = strlen(end);
    while (m > 0 && (buf[m - 1] == '\n' || buf[m - 1] == '\r' || buf[m - 1] == ' '))
        m--;
    if (m < k || memcmp(buf + m - k, end, k) != 0) {
        const char *why = write_error_at(tmp);
        fprintf(stderr, "remat: %s: cannot write '%s': PLplot's %s output is incomplete (%zu bytes): %s\n", plot_opt,
                out->path, dev, n, why ? why : "PLplot reported no error");
        free(buf);
        return 0;
    }
    int ok = fwrite(buf, 1, n, out->f) == n;
    int err = errno;
    free(buf);
    if (!ok)
        cli_out_fail(out, err);
    return ok;
}

/* PLplot's TMPDIR (plstdio.c, pl_create_tempfile) */
static const char *plplot_tmpdir(void)
{
    const char *t = getenv("TMPDIR");
    return t ? t : "/tmp";
}

/* An unnamed file (O_TMPFILE) in dir, for reading and writing; -1 where the
 * kernel or the file system has none. */
static int open_unnamed_in(const char *dir)
{
#ifdef O_TMPFILE
    if (access("/proc/self/fd", X_OK) == 0)
        return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#else
    (void)dir;
#endif
    return -1;
}

/* Why dir takes no more data (errno's words), NULL when it takes a little:
 * plinit writes its list of drivers (under 1 KiB) to a temp file in TMPDIR
 * unchecked, and in a full one ends the process ("No device drivers found"). */
static const char *no_room_in(const char *dir)
{
    int fd = open_unnamed_in(dir);
    if (fd < 0) {
        char name[4200];
        snprintf(name, sizeof name, "%s/remat-plot-XXXXXX", dir);
        fd = mkstemp(name);
        if (fd < 0)
            return strerror(errno);
        unlink(name);
    }
    static const char block[2048];
    const ssize_t w = write(fd, block, sizeof block);
    const char *why = w == (ssize_t)sizeof block ? NULL : strerror(w < 0 ? errno : ENOSPC);
    close(fd);
    return why;
}

/* The directory part of path, into dir. */
static void dir_of(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, cap, ".");
    else if (slash == path)
        snprintf(dir, cap, "/");
    else
        snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

/* The file PLplot draws into, its path into path; the descriptor to close
 * when done, or -1 with a message. Unnamed where the kernel can (a process
 * killed by any means leaves nothing), handed to PLplot as /proc/self/fd/N:
 * beside the output (a regular file: its directory takes the plot anyway),
 * else in TMPDIR. Else named in TMPDIR, registered in *slot so that SIGINT,
 * SIGTERM and SIGHUP remove it. */
static int render_file(const cli_out *out, char *path, size_t cap, int *slot)
{
    const char *tmpdir = plplot_tmpdir();
    const char *why = no_room_in(tmpdir);
    if (why) {
        fprintf(stderr, "remat: %s: cannot draw '%s': TMPDIR '%s' takes no more data (%s); PLplot needs a little "
                        "room there\n", plot_opt, out->path, tmpdir, why);
        return -1;
    }
    char dir[4096];
    int fd = -1;
    if (out->dest) {
        dir_of(out->dest, dir, sizeof dir);
        fd = open_unnamed_in(dir);
    }
    if (fd < 0)
        fd = open_unnamed_in(tmpdir);
    if (fd >= 0) {
        snprintf(path, cap, "/proc/self/fd/%d", fd);
        return fd;
    }
    snprintf(path, cap, "%s/remat-plot-XXXXXX", tmpdir);
    fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "remat: %s: cannot draw '%s': no temp file for PLplot in TMPDIR '%s': %s\n", plot_opt,
                out->path, tmpdir, strerror(errno));
        return -1;
    }
    *slot = cli_temp_register(path);
    return fd;
}

int cli_plot_panels(const char *path, int n_panels, const cli_panel *panels)
{
    return cli_plot_panels_for("--plot", path, n_panels, panels);
}

int cli_plot_panels_for(const char *opt, const char *path, int n_panels, const cli_panel *panels)
{
    plot_opt = opt;
    const char *dev = device_for(path);
    if (!dev) {
        fprintf(stderr, "remat: %s: '%s': unknown file type (use .png, .svg, .pdf or .ps)\n", plot_opt, path);
        return 0;
    }
    int any = 0;
    for (int k = 0; k < n_panels; k++)
        any |= has_points(&panels[k]);
    if (!any) {
        fprintf(stderr, "remat: %s: nothing to plot\n", plot_opt);
        return 0;
    }
    if (!plot_lib_open(plot_opt))
        return 0;
    int cols = 1;
    while (cols * cols < n_panels)
        cols++;
    int rows = (n_panels + cols - 1) / cols;
    /* PLplot opens, writes and closes its file unchecked: draw into a private
     * temp file (render_file), check it is complete, then copy it through a
     * checked cli_out (which also serves devices and refuses inputs and
     * read-only files). */
    cli_out out;
    if (!cli_out_open_for(&out, plot_opt, path))
        return 0;
    char tmp[4200];
    int slot = -1;
    const int fd = render_file(&out, tmp, sizeof tmp, &slot);
    if (fd < 0) {
        cli_out_abort(&out);
        return 0;
    }
    plsdev(dev);
    plsfnam(tmp);
    plspage(0, 0, 1000 * cols, 700 * rows, 0, 0);
    plscolbg(255, 255, 255);
    plssub(cols, rows);
    plinit();
    plscol0(1, 0, 0, 0);
    for (int k = 0; k < n_panels; k++) {
        const cli_panel *p = &panels[k];
        if (!draw_panel(p->title, p->xlabel, p->ylabel, p->logx, p->logy, p->n_series, p->series)) {
            pladv(0); /* an empty panel keeps its place in the grid */
            plcol0(1);
            plmtex("t", -2.0, 0.5, 0.5, "(no data)");
        }
    }
    plend();
    int ok = copy_rendered(tmp, dev, &out);
    if (strncmp(tmp, "/proc/self/fd/", 14)) /* named */
        unlink(tmp);
    cli_temp_release(slot);
    close(fd);
    if (!ok) {
        cli_out_abort(&out);
        return 0;
    }
    return cli_out_commit(&out);
}

int cli_plot(const char *path, const char *title, const char *xlabel, const char *ylabel, int logx, int logy,
             int n_series, const cli_series *series)
{
    cli_panel p = {title, xlabel, ylabel, logx, logy, n_series, series};
    return cli_plot_panels(path, 1, &p);
}
