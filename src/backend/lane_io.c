/*
 * lane_io.c — lane programs as text (see lane_io.h for the format) and the
 * REMAT_DUMP_LANES hook.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/lane_io.h"
#include "core/alloc.h"
#include "core/error.h"
#include "remat/op.h"

remat_status rmi_lane_program_write(FILE *f, const remat_lane_program *p)
{
    fprintf(f, "remat-lanes 1\nm %" PRId64 " bufs %d ins %d\n", p->m, p->n_bufs, p->n_ins);
    for (int b = 0; b < p->n_bufs; b++)
        fprintf(f, "b %d %d\n", p->bufs[b].dt, p->bufs[b].state);
    for (int i = 0; i < p->n_ins; i++) {
        const remat_lane_ins *I = &p->ins[i];
        fprintf(f, "i %d %d %d %d %" PRId32 " %" PRId32 " %" PRId32 " %" PRId32 " %" PRId64 " %" PRId64 " %a\n",
                I->kind, I->dt, I->op, I->post, I->a, I->b, I->c, I->buf, I->off, I->lstride, I->imm);
    }
    return ferror(f) ? rmi_error(REMAT_ERR_IO, "lane program: write failed") : REMAT_OK;
}

void rmi_lane_program_release(remat_lane_program *p)
{
    rmi_free((void *)p->ins), rmi_free((void *)p->bufs);
    *p = (remat_lane_program){0};
}

static bool dtype_ok(int dt) { return dt == REMAT_F32 || dt == REMAT_F64; }

/* an operand: -1 (none) or a register defined before instruction i */
static bool operand_ok(const remat_lane_ins *ins, int i, int32_t r)
{
    return r == -1 || (r >= 0 && r < i && ins[r].kind != REMAT_LANE_STORE && ins[r].kind != REMAT_LANE_ACC &&
                       ins[r].kind != REMAT_LANE_EXIT);
}

static remat_status check_ins(const remat_lane_program *p, int i, int line)
{
    const remat_lane_ins *I = &p->ins[i];
    if (I->kind > REMAT_LANE_EXIT || !dtype_ok(I->dt) || I->op >= REMAT_OP_COUNT)
        return rmi_error(REMAT_ERR_PARSE, "lane program line %d: kind %d, dtype %d or op %d out of range", line,
                         I->kind, I->dt, I->op);
    if (!operand_ok(p->ins, i, I->a) || !operand_ok(p->ins, i, I->b) || !operand_ok(p->ins, i, I->c))
        return rmi_error(REMAT_ERR_PARSE, "lane program line %d: an operand (%d %d %d) is not an earlier register",
                         line, I->a, I->b, I->c);
    const bool mem = I->kind == REMAT_LANE_LOAD || I->kind == REMAT_LANE_STORE || I->kind == REMAT_LANE_EXIT;
    if (mem && (I->buf < 0 || I->buf >= p->n_bufs || I->off < 0))
        return rmi_error(REMAT_ERR_PARSE, "lane program line %d: buffer %d (of %d) or offset %" PRId64 " out of range",
                         line, I->buf, p->n_bufs, I->off);
    if ((I->kind == REMAT_LANE_STORE || I->kind == REMAT_LANE_ACC || I->kind == REMAT_LANE_OP ||
         I->kind == REMAT_LANE_EXIT) && I->a < 0)
        return rmi_error(REMAT_ERR_PARSE, "lane program line %d: instruction without its operand", line);
    if (I->kind == REMAT_LANE_ACC && (I->b < 0 || p->ins[I->a].kind != REMAT_LANE_SUM0))
        return rmi_error(REMAT_ERR_PARSE, "lane program line %d: an accumulation into a register that is not a sum", line);
    if (I->kind == REMAT_LANE_EXIT && i != p->n_ins - 1)
        return rmi_error(REMAT_ERR_PARSE, "lane program line %d: an exit that is not the last instruction", line);
    return REMAT_OK;
}

remat_status rmi_lane_program_read(FILE *f, remat_lane_program *p)
{
    *p = (remat_lane_program){0};
    int version = 0, nb = -1, ni = -1;
    int64_t m = 0;
    if (fscanf(f, " remat-lanes %d m %" SCNd64 " bufs %d ins %d", &version, &m, &nb, &ni) != 4 || version != 1)
        return rmi_error(REMAT_ERR_PARSE, "lane program line 1-2: not a 'remat-lanes 1' header with m, bufs and ins");
    if (m < 1 || nb < 0 || ni < 0 || nb > (1 << 20) || ni > (1 << 24))
        return rmi_error(REMAT_ERR_PARSE, "lane program line 2: m %" PRId64 ", bufs %d, ins %d out of range", m, nb, ni);
    remat_lane_buf *bufs = rmi_calloc((size_t)nb + 1, sizeof *bufs);
    remat_lane_ins *ins = rmi_calloc((size_t)ni + 1, sizeof *ins);
    *p = (remat_lane_program){.m = m, .n_bufs = nb, .bufs = bufs, .n_ins = ni, .ins = ins};
    if (!bufs || !ins)
        return rmi_error(REMAT_ERR_NOMEM, "lane program: %d instructions", ni);
    for (int b = 0; b < nb; b++) {
        int dt, state;
        if (fscanf(f, " b %d %d", &dt, &state) != 2 || !dtype_ok(dt) || (state != 0 && state != 1))
            return rmi_error(REMAT_ERR_PARSE, "lane program line %d: expected 'b <dtype 0|1> <state 0|1>'", 3 + b);
        bufs[b] = (remat_lane_buf){.dt = (uint8_t)dt, .state = (uint8_t)state};
    }
    for (int i = 0; i < ni; i++) {
        const int line = 3 + nb + i;
        int kind, dt, op, post;
        remat_lane_ins *I = &ins[i];
        if (fscanf(f, " i %d %d %d %d %" SCNd32 " %" SCNd32 " %" SCNd32 " %" SCNd32 " %" SCNd64 " %" SCNd64 " %lf", &kind,
                   &dt, &op, &post, &I->a, &I->b, &I->c, &I->buf, &I->off, &I->lstride, &I->imm) != 11 ||
            kind < 0 || dt < 0 || op < 0 || post < 0 || post > 1 || kind > 255 || dt > 255 || op > 65535)
            return rmi_error(REMAT_ERR_PARSE, "lane program line %d: expected 'i' and 11 numbers", line);
        I->kind = (uint8_t)kind, I->dt = (uint8_t)dt, I->op = (uint16_t)op, I->post = (uint8_t)post;
        remat_status st = check_ins(p, i, line);
        if (st != REMAT_OK)
            return st;
    }
    return REMAT_OK;
}

/* FNV-1a: names a dump by its text, so the thousands of programs a test
 * suite translates (most of them the same few hundred) are one file each */
static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
    return h;
}

static bool dump_one(const char *dir, const remat_lane_program *p)
{
    char *text = NULL, path[4096], tmp[4200];
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    if (!m)
        return false;
    bool ok = rmi_lane_program_write(m, p) == REMAT_OK;
    ok = fclose(m) == 0 && ok;
    if (ok) {
        snprintf(path, sizeof path, "%s/lanes-%016" PRIx64 ".txt", dir, fnv1a(text, n));
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
        if (access(path, F_OK) != 0) { /* written whole, then renamed: readers never see half a file */
            FILE *f = fopen(tmp, "w");
            ok = f && fwrite(text, 1, n, f) == n;
            ok = (f && fclose(f) == 0) && ok;
            ok = ok && rename(tmp, path) == 0;
            if (!ok)
                remove(tmp);
        }
    }
    free(text); /* open_memstream's buffer comes from malloc */
    return ok;
}

void rmi_lane_dump(int n, const remat_lane_program *const *p)
{
    static atomic_int warned;
    const char *dir = getenv("REMAT_DUMP_LANES");
    if (!dir || !*dir)
        return;
    for (int k = 0; k < n; k++)
        if (!dump_one(dir, p[k]) && atomic_exchange(&warned, 1) == 0)
            fprintf(stderr, "remat: REMAT_DUMP_LANES: cannot write lane programs into %s\n", dir);
}
