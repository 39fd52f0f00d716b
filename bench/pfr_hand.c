/*
 * pfr_hand.c — hand-written store-all discrete adjoints of the A->B->C PFR
 * (see pfr_hand.h). The reverse sweeps are the transposes of the forward
 * steps, written out: lambda = dJ/dy_{i+1} going in, dJ/dy_i coming out.
 */
#include "pfr_hand.h"

#include <stdbool.h>

/* Forward: the graph's expression order (y + dy*h). Backward, per step:
 *   dJ/dk1 += h A_i (lB - lA),   dJ/dk2 += h B_i (lC - lB),
 *   lA += h k1 (lB - lA),        lB += h k2 (lC - lB),   lC unchanged. */
void pfr_hand_euler(int64_t steps, double h, const double y0[3], double k1, double k2, double *y, double *loss,
                    double g[2])
{
    y[0] = y0[0], y[1] = y0[1], y[2] = y0[2];
    for (int64_t i = 0; i < steps; i++) {
        const double *c = y + 3 * i;
        double *n = y + 3 * (i + 1);
        double r1 = k1 * c[0], r2 = k2 * c[1];
        n[0] = c[0] + -r1 * h;
        n[1] = c[1] + (r1 - r2) * h;
        n[2] = c[2] + r2 * h;
    }
    *loss = -y[3 * steps + 1];
    double la = 0, lb = -1, lc = 0, g1 = 0, g2 = 0;
    for (int64_t i = steps - 1; i >= 0; i--) {
        const double *c = y + 3 * i;
        double dab = lb - la, dbc = lc - lb;
        g1 += h * c[0] * dab;
        g2 += h * c[1] * dbc;
        la += h * k1 * dab;
        lb += h * k2 * dbc;
    }
    g[0] = g1, g[1] = g2;
}

void pfr_hand_euler_soa(pfr_hand_soa *P)
{
    const int64_t m = P->m;
    const double h = P->h, *restrict k1 = P->k1, *restrict k2 = P->k2;
    for (int64_t i = 0; i < P->steps; i++) {
        const double *restrict a = P->a + i * m, *restrict b = P->b + i * m, *restrict c = P->c + i * m;
        double *restrict na = P->a + (i + 1) * m, *restrict nb = P->b + (i + 1) * m,
                         *restrict nc = P->c + (i + 1) * m;
        for (int64_t j = 0; j < m; j++) {
            double r1 = k1[j] * a[j], r2 = k2[j] * b[j];
            na[j] = a[j] + -r1 * h;
            nb[j] = b[j] + (r1 - r2) * h;
            nc[j] = c[j] + r2 * h;
        }
    }
    double *restrict la = P->la, *restrict lb = P->lb, *restrict lc = P->lc, *restrict g1 = P->g1,
                     *restrict g2 = P->g2;
    const double *bl = P->b + P->steps * m;
    double loss = 0;
    for (int64_t j = 0; j < m; j++) {
        loss += bl[j];
        la[j] = 0, lb[j] = -1, lc[j] = 0, g1[j] = 0, g2[j] = 0;
    }
    P->loss = -loss;
    for (int64_t i = P->steps - 1; i >= 0; i--) {
        const double *restrict a = P->a + i * m, *restrict b = P->b + i * m;
        for (int64_t j = 0; j < m; j++) {
            double dab = lb[j] - la[j], dbc = lc[j] - lb[j];
            g1[j] += h * a[j] * dab;
            g2[j] += h * b[j] * dbc;
            la[j] += h * k1[j] * dab;
            lb[j] += h * k2[j] * dbc;
        }
    }
}

void pfr_hand_euler_soa_blocked(pfr_hand_soa *P, int64_t block, double *ba, double *bb, double *bc)
{
    const int64_t m = P->m;
    const double h = P->h;
    double loss = 0;
    for (int64_t j0 = 0; j0 < m; j0 += block) {
        const int64_t w = m - j0 < block ? m - j0 : block;
        const double *restrict k1 = P->k1 + j0, *restrict k2 = P->k2 + j0;
        for (int64_t j = 0; j < w; j++)
            ba[j] = P->a[j0 + j], bb[j] = P->b[j0 + j], bc[j] = P->c[j0 + j];
        for (int64_t i = 0; i < P->steps; i++) {
            const double *restrict a = ba + i * w, *restrict b = bb + i * w, *restrict c = bc + i * w;
            double *restrict na = ba + (i + 1) * w, *restrict nb = bb + (i + 1) * w, *restrict nc = bc + (i + 1) * w;
            for (int64_t j = 0; j < w; j++) {
                double r1 = k1[j] * a[j], r2 = k2[j] * b[j];
                na[j] = a[j] + -r1 * h;
                nb[j] = b[j] + (r1 - r2) * h;
                nc[j] = c[j] + r2 * h;
            }
        }
        double *restrict la = P->la + j0, *restrict lb = P->lb + j0, *restrict lc = P->lc + j0,
                         *restrict g1 = P->g1 + j0, *restrict g2 = P->g2 + j0;
        const double *bl = bb + P->steps * w;
        for (int64_t j = 0; j < w; j++) {
            loss += bl[j];
            la[j] = 0, lb[j] = -1, lc[j] = 0, g1[j] = 0, g2[j] = 0;
        }
        for (int64_t i = P->steps - 1; i >= 0; i--) {
            const double *restrict a = ba + i * w, *restrict b = bb + i * w;
            for (int64_t j = 0; j < w; j++) {
                double dab = lb[j] - la[j], dbc = lc[j] - lb[j];
                g1[j] += h * a[j] * dab;
                g2[j] += h * b[j] * dbc;
                la[j] += h * k1[j] * dab;
                lb[j] += h * k2[j] * dbc;
            }
        }
    }
    P->loss = -loss;
}

/* ---- explicit Runge–Kutta ---- */

#define MAX_STAGES 6

typedef struct {
    int s;
    double a[MAX_STAGES][MAX_STAGES]; /* a[i][j], j < i */
    double b[MAX_STAGES];
} tableau;

/* Euler; classical RK4 (Kutta 1901); Tsitouras 2011 Table 1 with the digits
 * of diffrax's Tsit5 (the FSAL seventh stage has solution weight 0). */
static const tableau tableaus[PFR_HAND_METHOD_COUNT] = {
    [PFR_HAND_EULER] = {.s = 1, .b = {1.0}},
    [PFR_HAND_RK4] = {.s = 4,
                      .a = {{0}, {0.5}, {0.0, 0.5}, {0.0, 0.0, 1.0}},
                      .b = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0}},
    [PFR_HAND_TSIT5] = {.s = 6,
                        .a = {{0},
                              {0.161},
                              {-0.0084806554923569885444268742502307746751212,
                               0.33548065549235698854442687425023077467512},
                              {2.8971530571054934321304325941929387649249,
                               -6.3594484899750748431481599123838256259527,
                               4.3622954328695814110177273181908868610278},
                              {5.3258648284392566044288779208405113178365,
                               -11.748883564062827877747170339785772961887,
                               7.4955393428898362083046047845643581556587,
                               -0.092495066361755249256502079332071916113500},
                              {5.8614554429464200286592514869826478903943,
                               -12.920969317847109291706118681783359395418,
                               8.1593678985761586431804007945392534851819,
                               -0.071584973281400997224530542525829738691272,
                               -0.028269050394068382909003057212712241467176}},
                        .b = {0.096460766818065229518167313165128763337120, 0.01,
                              0.47988965041449957477524953229059651991304,
                              1.3790085741037418931922748218568727707565,
                              -3.2900695154360806799010475857113638501157,
                              2.3247105240997739824153559183987657961091}},
};

static int64_t total_steps(const pfr_hand_rk_problem *p)
{
    int64_t n = 0;
    for (int k = 0; k < p->n_int; k++)
        n += p->steps[k];
    return n;
}

/* Per step: (A, B) of every stage (f_p reads them; f_y is constant), then
 * the output states (n_int, 3). */
size_t pfr_hand_rk_work_doubles(const pfr_hand_rk_problem *p)
{
    return (size_t)total_steps(p) * 2 * (size_t)tableaus[p->method].s + 3 * (size_t)p->n_int;
}

/* acc = sum_j w[j] v[j] over nonzero w, added left to right (remat's order) */
static void combine(int n, const double *w, double v[][3], double acc[3])
{
    bool any = false;
    for (int j = 0; j < n; j++) {
        if (w[j] == 0.0)
            continue;
        for (int c = 0; c < 3; c++) {
            double t = w[j] == 1.0 ? v[j][c] : v[j][c] * w[j];
            acc[c] = any ? acc[c] + t : t;
        }
        any = true;
    }
    if (!any)
        acc[0] = acc[1] = acc[2] = 0.0;
}

double pfr_hand_rk(const pfr_hand_rk_problem *p, const double y0[3], double k1, double k2, double g[2])
{
    const tableau *tb = &tableaus[p->method];
    const int s = tb->s;
    const int64_t n = total_steps(p);
    double *stage = p->work, *out = p->work + n * 2 * s;
    double y[3] = {y0[0], y0[1], y0[2]}, K[MAX_STAGES][3];
    double *st = stage;
    for (int k = 0; k < p->n_int; k++) {
        const double h = p->h[k];
        for (int64_t i = 0; i < p->steps[k]; i++) {
            for (int r = 0; r < s; r++) {
                double Y[3] = {y[0], y[1], y[2]}, inc[3];
                if (r > 0) {
                    combine(r, tb->a[r], K, inc);
                    Y[0] = y[0] + inc[0], Y[1] = y[1] + inc[1], Y[2] = y[2] + inc[2];
                }
                *st++ = Y[0], *st++ = Y[1];
                double r1 = k1 * Y[0], r2 = k2 * Y[1];
                K[r][0] = h * -r1, K[r][1] = h * (r1 - r2), K[r][2] = h * r2;
            }
            double inc[3];
            combine(s, tb->b, K, inc);
            y[0] += inc[0], y[1] += inc[1], y[2] += inc[2];
        }
        out[3 * k] = y[0], out[3 * k + 1] = y[1], out[3 * k + 2] = y[2];
    }

    double loss = 0, lam[3] = {0, 0, 0}, g1 = 0, g2 = 0;
    if (!p->data)
        loss = -out[3 * (p->n_int - 1) + 1];
    else
        for (int k = 0; k < p->n_int; k++)
            for (int c = 0; c < 3; c++) {
                double r = out[3 * k + c] - p->data[3 * k + c];
                loss += r * r;
            }
    for (int k = p->n_int - 1; k >= 0; k--) {
        if (!p->data)
            lam[1] += k == p->n_int - 1 ? -1.0 : 0.0;
        else
            for (int c = 0; c < 3; c++)
                lam[c] += 2.0 * (out[3 * k + c] - p->data[3 * k + c]);
        const double h = p->h[k];
        for (int64_t i = 0; i < p->steps[k]; i++) {
            st -= 2 * s;
            /* Kbar_r = b_r lam + sum_{q>r} a_qr Ybar_q; Ybar_r = h f_y^T Kbar_r */
            double Yb[MAX_STAGES][3];
            double nl[3] = {lam[0], lam[1], lam[2]};
            for (int r = s - 1; r >= 0; r--) {
                double Kb[3];
                for (int c = 0; c < 3; c++) {
                    Kb[c] = tb->b[r] * lam[c];
                    for (int q = r + 1; q < s; q++)
                        Kb[c] += tb->a[q][r] * Yb[q][c];
                }
                double dab = Kb[1] - Kb[0], dbc = Kb[2] - Kb[1];
                g1 += h * st[2 * r] * dab;
                g2 += h * st[2 * r + 1] * dbc;
                Yb[r][0] = h * k1 * dab, Yb[r][1] = h * k2 * dbc, Yb[r][2] = 0.0;
                for (int c = 0; c < 3; c++)
                    nl[c] += Yb[r][c];
            }
            lam[0] = nl[0], lam[1] = nl[1], lam[2] = nl[2];
        }
    }
    g[0] = g1, g[1] = g2;
    return loss;
}
