/*
 * test_jit_cache.c — compiled lane programs on disk (src/backend/cpu/jit_disk.h):
 * a first process compiles and stores, a second loads instead of running
 * gcc; a truncated, altered or foreign entry, or a FIFO in its place, is
 * ignored (never waited on) and rebuilt, and so is one that another user
 * owns or could have written; a cache directory that is not the user's
 * alone is not used (said once); REMAT_NO_CACHE=1 neither reads nor writes (nor prints: code compiled in
 * memory is asked only for the symbols it defines); processes racing to store the
 * same entry all get correct code and leave one whole entry and no
 * temporary files. Each case runs its processes (fork) on a fresh directory,
 * and each process compares its compiled results bit for bit with the
 * interpreted ones and reports the cache's counts through shared memory.
 * The key is the lane programs themselves: an unchanged program hits in a
 * new process without loading libgccjit, a changed one misses; without
 * libgccjit at run time loops are interpreted, and entries on disk still load.
 * Temporary files (jit_tmp.h): a SIGTERM while gcc generates code or while
 * as/ld run leaves none, in the cache or in TMPDIR; those a SIGKILL left are
 * swept; the program's signal handlers survive a compilation.
 * Only built with libgccjit (tests/meson.build).
 * Bitwise assertions rest on contracts 1 and 2 (docs/design-notes.md,
 * "Bitwise contracts"): compiled loops, loaded from disk or not, give the
 * interpreter's bits.
 */
#include "test_util.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend_impl.h"
#include "backend/cpu/jit.h"
#include "backend/cpu/jit_disk.h"
#include "core/pool.h"
#include "remat/remat.h"

typedef struct {
    int ok; /* results equal the interpreter's, loops compiled (or not, with the cache off) */
    remat_jit_disk_counts c;
} report;

/* value_and_grad of the PFR problem (binomial:10): loss and dk1, dk2 */
static int pfr(double out[3], int64_t *compiled)
{
    remat_problem *pb = NULL;
    remat_scan_options so = {0};
    remat_fn *vg = NULL;
    remat_program *p = NULL;
    int ok = remat_problem_new("pfr-euler", 500, &pb) == REMAT_OK &&
             remat_schedule_parse("binomial:10", &so.schedule) == REMAT_OK &&
             remat_problem_build(pb, &so, &vg) == REMAT_OK && remat_compile(vg, remat_backend_cpu(), &p) == REMAT_OK;
    if (ok) {
        remat_tensor o[3];
        for (int i = 0; i < 3; i++)
            o[i] = remat_program_output_desc(p, i), o[i].data = out + i;
        ok = remat_run(p, remat_problem_num_inputs(pb), remat_problem_inputs(pb), 3, o, NULL) == REMAT_OK;
        remat_memory_plan plan;
        remat_program_plan(p, &plan);
        *compiled = plan.compiled_loops;
    }
    remat_program_free(p);
    remat_fn_free(vg);
    remat_problem_free(pb);
    return ok;
}

/* where the children's stderr goes, when set (the case then reads it) */
static const char *child_stderr;

/* in a child: interpreted, then compiled through the cache in dir */
static void child(const char *dir, int no_cache, int start_fd, report *r)
{
    if (child_stderr) {
        const int fd = open(child_stderr, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) != 2)
            _exit(3);
        close(fd);
    }
    alarm(120); /* a process blocked on the cache (a FIFO entry) dies instead of hanging the test */
    if (start_fd >= 0) { /* wait for the parent to release every child at once */
        char c;
        while (read(start_fd, &c, 1) > 0) {
        }
    }
    setenv("REMAT_CACHE_DIR", dir, 1);
    if (no_cache)
        setenv("REMAT_NO_CACHE", "1", 1);
    double want[3], got[3];
    int64_t n_want = -1, n_got = -1;
    setenv("REMAT_NO_JIT", "1", 1);
    int ok = pfr(want, &n_want);
    unsetenv("REMAT_NO_JIT");
    ok = ok && pfr(got, &n_got) && !memcmp(want, got, sizeof want) && n_want == 0 && n_got == 2;
    r->ok = ok;
    rmi_jit_disk_get_counts(&r->c);
    _exit(0);
}

/* n processes at once on dir; their reports into r */
static void run_children(const char *dir, int no_cache, int n, report *r)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid[8];
    for (int i = 0; i < n; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            close(fds[1]);
            child(dir, no_cache, fds[0], &r[i]);
        }
    }
    close(fds[0]);
    close(fds[1]); /* go */
    for (int i = 0; i < n; i++) {
        int status;
        assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (!r[i].ok)
            fail_msg("process %d of %d: compiled results differ from interpreted ones, or not compiled", i, n);
    }
}

static report *shared_reports(void)
{
    report *r = mmap(NULL, sizeof *r * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(r != MAP_FAILED);
    memset(r, 0, sizeof *r * 8);
    return r;
}

/* entries (lanes-*.rjit) and temporary files (.*) in dir; path of the last entry */
static void list_dir(const char *dir, int *entries, int *temps, char *entry, size_t cap)
{
    *entries = *temps = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (e->d_name[0] == '.')
            (*temps)++;
        else if (!strncmp(e->d_name, "lanes-", 6)) {
            (*entries)++;
            snprintf(entry, cap, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
}

static void fresh_dir(char *dir, size_t cap)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, cap, "%s/remat-jit-cache-XXXXXX", t && *t ? t : "/tmp");
    assert_non_null(mkdtemp(dir));
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    char p[4200];
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name), unlink(p);
    if (d)
        closedir(d);
    rmdir(dir);
}

static void test_jit_cache_miss_then_hit(void **state)
{
    (void)state;
    char dir[4096], entry[4200];
    fresh_dir(dir, sizeof dir);
    report *r = shared_reports();
    run_children(dir, 0, 1, r);
    /* the forward and backward scan nodes: one compilation of all kernels, stored */
    assert_int_equal(r[0].c.misses, 1);
    assert_int_equal(r[0].c.stored, 1);
    assert_int_equal(r[0].c.hits, 0);
    int entries, temps;
    list_dir(dir, &entries, &temps, entry, sizeof entry);
    assert_int_equal(entries, 1);
    assert_int_equal(temps, 0);
    run_children(dir, 0, 1, r);
    assert_int_equal(r[0].c.hits, 1);
    assert_int_equal(r[0].c.misses, 0);
    assert_int_equal(r[0].c.stored, 0);
    munmap(r, sizeof *r * 8);
    remove_dir(dir);
}

/* the entry rewritten by edit, then: one rejected load, a rebuild, a hit after */
static void corrupt_then_rebuild(void (*edit)(const char *path))
{
    char dir[4096], entry[4200];
    fresh_dir(dir, sizeof dir);
    report *r = shared_reports();
    run_children(dir, 0, 1, r);
    int entries, temps;
    list_dir(dir, &entries, &temps, entry, sizeof entry);
    assert_int_equal(entries, 1);
    edit(entry);
    run_children(dir, 0, 1, r);
    assert_int_equal(r[0].c.rejected, 1);
    assert_int_equal(r[0].c.hits, 0);
    assert_int_equal(r[0].c.stored, 1);
    run_children(dir, 0, 1, r);
    assert_int_equal(r[0].c.hits, 1);
    assert_int_equal(r[0].c.rejected, 0);
    munmap(r, sizeof *r * 8);
    remove_dir(dir);
}

static void truncate_half(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, n / 2), 0);
}

static void flip_byte(const char *path)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, n - 200, SEEK_SET); /* inside the shared object's bytes */
    int c = fgetc(f);
    fseek(f, n - 200, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
}

static void replace_with_text(const char *path)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("not a cache entry\n", f);
    fclose(f);
}

static void replace_with_fifo(const char *path)
{
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
}

static void test_jit_cache_truncated_entry_rebuilt(void **state)
{
    (void)state;
    corrupt_then_rebuild(truncate_half);
}

static void test_jit_cache_altered_entry_rebuilt(void **state)
{
    (void)state;
    corrupt_then_rebuild(flip_byte);
}

static void test_jit_cache_foreign_file_rebuilt(void **state)
{
    (void)state;
    corrupt_then_rebuild(replace_with_text);
}

/* opening a FIFO for reading blocks until a writer comes: the load must not wait */
static void test_jit_cache_fifo_entry_rebuilt(void **state)
{
    (void)state;
    corrupt_then_rebuild(replace_with_fifo);
}

/* An entry another user could have written is code this process would run:
 * not loaded (rejected), replaced by one of this process. */
static void make_world_writable(const char *path)
{
    assert_int_equal(chmod(path, 0666), 0);
}

static void give_away(const char *path)
{
    assert_int_equal(chown(path, 65534, 65534), 0);
}

static void test_jit_cache_untrusted_entry_not_loaded(void **state)
{
    (void)state;
    corrupt_then_rebuild(make_world_writable);
    if (geteuid() != 0) {
        print_message("skipping the entry owned by another user: needs root to chown\n");
        return;
    }
    corrupt_then_rebuild(give_away);
}

/* the number of lines of path that contain s */
static int lines_with(const char *path, const char *s)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, s) != NULL;
    fclose(f);
    return n;
}

/* dir made untrusted by edit: compiled in memory, nothing read or written
 * there, and said once on stderr */
static void untrusted_dir_unused(void (*edit)(const char *path))
{
    char dir[4096], entry[4200], err[4200];
    fresh_dir(dir, sizeof dir);
    run_children(dir, 0, 1, shared_reports()); /* an entry that would hit */
    edit(dir);
    snprintf(err, sizeof err, "%s.stderr", dir);
    child_stderr = err;
    report *r = shared_reports();
    run_children(dir, 0, 1, r); /* still compiled: r->ok */
    child_stderr = NULL;
    assert_int_equal(r[0].c.hits + r[0].c.misses + r[0].c.stored, 0);
    assert_int_equal(lines_with(err, "not used"), 1);
    assert_int_equal(lines_with(err, dir), 1);
    int entries, temps;
    list_dir(dir, &entries, &temps, entry, sizeof entry);
    assert_int_equal(entries, 1);
    assert_int_equal(temps, 0);
    unlink(err);
    munmap(r, sizeof *r * 8);
    remove_dir(dir);
}

static void test_jit_cache_untrusted_dir_unused(void **state)
{
    (void)state;
    untrusted_dir_unused(make_world_writable);
    if (geteuid() != 0) {
        print_message("skipping the directory owned by another user: needs root to chown\n");
        return;
    }
    untrusted_dir_unused(give_away);
}

static void test_jit_cache_off_reads_and_writes_nothing(void **state)
{
    (void)state;
    char dir[4096], entry[4200];
    fresh_dir(dir, sizeof dir);
    report *r = shared_reports();
    char err[4200];
    snprintf(err, sizeof err, "%s.stderr", dir);
    child_stderr = err;
    run_children(dir, 1, 1, r); /* compiled in memory, as before the cache */
    child_stderr = NULL;
    assert_int_equal(r[0].c.hits + r[0].c.misses + r[0].c.stored, 0);
    /* and quietly: libgccjit's result printed dlsym's "undefined symbol:
     * remat_lane_vmap" when asked for the map pointer of code without a
     * blocked program (the scan's kernels), which never defines it */
    struct stat st;
    assert_int_equal(stat(err, &st), 0);
    if (st.st_size != 0) {
        char text[512] = {0};
        FILE *f = fopen(err, "r");
        if (f) {
            (void)!fread(text, 1, sizeof text - 1, f);
            fclose(f);
        }
        fail_msg("compiling in memory wrote to stderr: %s", text);
    }
    unlink(err);
    int entries, temps;
    list_dir(dir, &entries, &temps, entry, sizeof entry);
    assert_int_equal(entries + temps, 0);
    munmap(r, sizeof *r * 8);
    remove_dir(dir);
}

static void test_jit_cache_concurrent_processes(void **state)
{
    (void)state;
    enum { N = 4 };
    char dir[4096], entry[4200];
    fresh_dir(dir, sizeof dir);
    report *r = shared_reports();
    run_children(dir, 0, N, r); /* all may miss and store: renames replace whole files */
    int stored = 0;
    for (int i = 0; i < N; i++)
        stored += (int)r[i].c.stored;
    assert_true(stored >= 1);
    int entries, temps;
    list_dir(dir, &entries, &temps, entry, sizeof entry);
    assert_int_equal(entries, 1);
    assert_int_equal(temps, 0);
    run_children(dir, 0, N, r);
    for (int i = 0; i < N; i++)
        assert_int_equal(r[i].c.hits, 1);
    munmap(r, sizeof *r * 8);
    remove_dir(dir);
}

/* y = x * imm (op MUL) or x + imm (ADD) over one lane, one step */
typedef struct {
    remat_lane_ins ins[4];
    remat_lane_buf bufs[2];
    remat_lane_program p;
} lane_prog;

static const remat_lane_program *make_prog(lane_prog *s, remat_op op, double imm)
{
    *s = (lane_prog){
        .ins = {{.kind = REMAT_LANE_LOAD, .dt = REMAT_F64, .buf = 0},
                {.kind = REMAT_LANE_CONST, .dt = REMAT_F64, .imm = imm},
                {.kind = REMAT_LANE_OP, .dt = REMAT_F64, .op = (uint16_t)op, .a = 0, .b = 1},
                {.kind = REMAT_LANE_STORE, .dt = REMAT_F64, .a = 2, .buf = 1}},
        .bufs = {{.dt = REMAT_F64}, {.dt = REMAT_F64}},
    };
    s->p = (remat_lane_program){.m = 1, .n_ins = 4, .ins = s->ins, .n_bufs = 2, .bufs = s->bufs};
    return &s->p;
}

static int runs_right(remat_lane_fn fn, remat_op op, double imm)
{
    double x = 3.0, y = 0.0;
    char *bufs[2] = {(char *)&x, (char *)&y};
    const int64_t strides[2] = {0, 0};
    fn(bufs, strides, 1, 1);
    return y == (op == REMAT_OP_MUL ? 3.0 * imm : 3.0 + imm);
}

static int gccjit_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        found |= strstr(line, "libgccjit") != NULL;
    if (f)
        fclose(f);
    return found;
}

/* Runs fn in a child process (its own in-process cache, libgccjit not yet
 * loaded) with REMAT_CACHE_DIR=dir; the child's exit code is fn's. */
static int in_child(const char *dir, int (*fn)(void))
{
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("REMAT_CACHE_DIR", dir, 1);
        _exit(fn());
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* The cache directory the environment names (REMAT_CACHE_DIR, unless
 * REMAT_NO_CACHE), as remat_compile would hand it to the backend. */
static const char *env_cache(void)
{
    remat_compile_options o;
    assert_ok(remat_compile_options_from_env(&o));
    return o.no_cache ? NULL : o.cache_dir;
}

static int compile_mul(void) /* 0 when compiled, stored and right */
{
    const remat_backend *be = remat_backend_cpu();
    lane_prog s;
    const remat_lane_program *pp[1] = {make_prog(&s, REMAT_OP_MUL, 1.25)};
    remat_lane_fn fn = NULL;
    remat_jit_disk_counts c;
    if (be->iface.compile_lanes(be, 1, pp, &fn, env_cache()) != REMAT_OK || !runs_right(fn, REMAT_OP_MUL, 1.25))
        return 1;
    rmi_jit_disk_get_counts(&c);
    return c.stored == 1 && c.misses == 1 ? 0 : 2;
}

static int load_then_change(void)
{
    const remat_backend *be = remat_backend_cpu();
    lane_prog s;
    const remat_lane_program *pp[1] = {make_prog(&s, REMAT_OP_MUL, 1.25)};
    remat_lane_fn fn = NULL;
    remat_jit_disk_counts c;
    /* the same program, built again: found on disk without libgccjit */
    if (be->iface.load_lanes(1, pp, &fn, env_cache()) != REMAT_OK || !runs_right(fn, REMAT_OP_MUL, 1.25))
        return 3;
    rmi_jit_disk_get_counts(&c);
    if (c.hits != 1 || c.misses != 0 || gccjit_mapped())
        return 4;
    /* another constant, another op: other programs, other keys */
    pp[0] = make_prog(&s, REMAT_OP_MUL, 1.5);
    if (be->iface.load_lanes(1, pp, &fn, env_cache()) != REMAT_ERR_UNSUPPORTED)
        return 5;
    pp[0] = make_prog(&s, REMAT_OP_ADD, 1.25);
    if (be->iface.load_lanes(1, pp, &fn, env_cache()) != REMAT_ERR_UNSUPPORTED)
        return 6;
    rmi_jit_disk_get_counts(&c);
    if (c.hits != 1 || c.misses != 2 || gccjit_mapped())
        return 7;
    if (be->iface.compile_lanes(be, 1, pp, &fn, env_cache()) != REMAT_OK || !runs_right(fn, REMAT_OP_ADD, 1.25))
        return 8;
    rmi_jit_disk_get_counts(&c);
    return c.stored == 1 && gccjit_mapped() ? 0 : 9;
}

static void test_jit_cache_key_is_the_program(void **state)
{
    (void)state;
    char dir[4096], entry[4200];
    fresh_dir(dir, sizeof dir);
    assert_int_equal(in_child(dir, compile_mul), 0);
    assert_int_equal(in_child(dir, load_then_change), 0);
    int entries, temps;
    list_dir(dir, &entries, &temps, entry, sizeof entry);
    assert_int_equal(entries, 2);
    assert_int_equal(temps, 0);
    remove_dir(dir);
}

static int without_gccjit(void) /* libgccjit missing: compiling fails once, quietly interpreted; disk hits load */
{
    setenv("REMAT_GCCJIT_LIB", "/nonexistent/libgccjit.so.0", 1);
    const remat_backend *be = remat_backend_cpu();
    lane_prog s;
    const remat_lane_program *pp[1] = {make_prog(&s, REMAT_OP_MUL, 1.25)};
    remat_lane_fn fn = NULL;
    if (be->iface.load_lanes(1, pp, &fn, env_cache()) != REMAT_OK || !runs_right(fn, REMAT_OP_MUL, 1.25)) /* stored before */
        return 10;
    pp[0] = make_prog(&s, REMAT_OP_MUL, 2.5);
    if (be->iface.compile_lanes(be, 1, pp, &fn, env_cache()) != REMAT_ERR_BACKEND || !strstr(remat_last_error(), "cannot load"))
        return 11;
    double want[3], got[3];
    int64_t n_got = -1;
    setenv("REMAT_NO_CACHE", "1", 1); /* the PFR loops are not on disk either */
    setenv("REMAT_NO_JIT", "1", 1);
    int ok = pfr(want, &n_got);
    unsetenv("REMAT_NO_JIT");
    ok = ok && pfr(got, &n_got) && !memcmp(want, got, sizeof want) && n_got == 0;
    return ok && !be->iface.can_compile_lanes() ? 0 : 12;
}

static void test_jit_cache_without_libgccjit(void **state)
{
    (void)state;
    char dir[4096];
    fresh_dir(dir, sizeof dir);
    assert_int_equal(in_child(dir, compile_mul), 0);
    assert_int_equal(in_child(dir, without_gccjit), 0);
    remove_dir(dir);
}

/* ---- temporary files: swept when stale, removed by a signal ---- */

/* a pid no process has now: a child that has exited and been reaped */
static pid_t dead_pid(void)
{
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return pid;
}

static void put_file(const char *dir, const char *name, time_t age_s)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs("left by a killed process\n", f);
    fclose(f);
    const struct timespec t[2] = {{.tv_sec = time(NULL) - age_s}, {.tv_sec = time(NULL) - age_s}};
    assert_int_equal(utimensat(AT_FDCWD, p, t, 0), 0);
}

static int exists(const char *dir, const char *name)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* A process killed by SIGKILL while compiling leaves its temporary files:
 * the next compilation removes those of dead processes older than
 * REMAT_JIT_TMP_STALE_S, and only those. */
static void test_jit_cache_stale_temps_swept(void **state)
{
    (void)state;
    char dir[4096], so_dead[64], lanes_dead[64], so_young[64], so_alive[64];
    fresh_dir(dir, sizeof dir);
    const long dead = (long)dead_pid(), hour = 3600;
    snprintf(so_dead, sizeof so_dead, ".so-%ld-Ab3dEf", dead);
    snprintf(lanes_dead, sizeof lanes_dead, ".lanes-%ld-Ab3dEf", dead);
    snprintf(so_young, sizeof so_young, ".so-%ld-Zz9yXw", dead);
    snprintf(so_alive, sizeof so_alive, ".so-%ld-Ab3dEf", (long)getpid());
    put_file(dir, so_dead, hour);
    put_file(dir, lanes_dead, hour);
    put_file(dir, ".so-Qw3rTy", hour); /* named before names had pids: the age alone */
    put_file(dir, so_young, 60);        /* dead, but a writer in another pid namespace could own it */
    put_file(dir, so_alive, hour);      /* this process: compiling, as far as anyone knows */
    put_file(dir, "notes.txt", hour);   /* not the cache's: never touched */
    assert_int_equal(in_child(dir, compile_mul), 0);
    assert_false(exists(dir, so_dead));
    assert_false(exists(dir, lanes_dead));
    assert_false(exists(dir, ".so-Qw3rTy"));
    assert_true(exists(dir, so_young));
    assert_true(exists(dir, so_alive));
    assert_true(exists(dir, "notes.txt"));
    remove_dir(dir);
}

/* y = x (+ c)(* c)... over K pairs of instructions: a body gcc takes a while on */
enum { BIG_K = 2000 };
static remat_lane_ins big_ins[2 * BIG_K + 2];

static const remat_lane_program *make_big(remat_lane_program *p, remat_lane_buf bufs[2])
{
    bufs[0] = bufs[1] = (remat_lane_buf){.dt = REMAT_F64};
    int n = 0;
    big_ins[n++] = (remat_lane_ins){.kind = REMAT_LANE_LOAD, .dt = REMAT_F64, .buf = 0};
    for (int k = 0; k < BIG_K; k++) {
        big_ins[n] = (remat_lane_ins){.kind = REMAT_LANE_CONST, .dt = REMAT_F64, .imm = 1.0 + k * 1e-3};
        big_ins[n + 1] = (remat_lane_ins){.kind = REMAT_LANE_OP, .dt = REMAT_F64,
                                          .op = (uint16_t)(k % 2 ? REMAT_OP_MUL : REMAT_OP_ADD), .a = n - 1, .b = n};
        n += 2;
    }
    big_ins[n] = (remat_lane_ins){.kind = REMAT_LANE_STORE, .dt = REMAT_F64, .a = n - 1, .buf = 1}; /* the last op */
    n++;
    *p = (remat_lane_program){.m = 1, .n_ins = n, .ins = big_ins, .n_bufs = 2, .bufs = bufs};
    return p;
}

static void nothing(void *ctx, int64_t b, int64_t e)
{
    (void)ctx, (void)b, (void)e;
}

/* in a child: the pool's workers started (a signal must not end the process
 * through one of them), then the big body compiled into the cache in dir,
 * with TMPDIR=tmp; exits 0 when compiled */
static void compile_big(const char *dir, const char *tmp)
{
    setenv("REMAT_CACHE_DIR", dir, 1);
    setenv("TMPDIR", tmp, 1);
    remat_set_num_threads(2);
    rmi_parallel_for(1 << 20, 1 << 10, nothing, NULL);
    remat_lane_program p;
    remat_lane_buf bufs[2];
    const remat_lane_program *pp[1] = {make_big(&p, bufs)};
    remat_lane_fn fn = NULL;
    _exit(remat_backend_cpu()->iface.compile_lanes(remat_backend_cpu(), 1, pp, &fn, env_cache()) == REMAT_OK ? 0 : 1);
}

/* whether dir holds a file whose name starts with prefix */
static int has_prefix(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int found = 0;
    for (struct dirent *e; (e = readdir(d));)
        found |= !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return found;
}

/* whether process pid has a child process now: gcc's driver, run by
 * libgccjit as a process of its own, or as or ld */
static int has_child_process(pid_t pid)
{
    char p[64], buf[256] = {0};
    snprintf(p, sizeof p, "/proc/%ld/task/%ld/children", (long)pid, (long)pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n > 0 && buf[0] >= '0' && buf[0] <= '9';
}

/* SIGTERM to a process compiling the big body, when ready(pid, dir) first
 * says so (with group, to its whole process group, as a terminal's Ctrl-C
 * goes: gcc's driver and as or ld too): it ends by SIGTERM as before, and
 * leaves neither its temporary files in the cache directory nor
 * libgccjit's directory in TMPDIR. False when the compilation ended before
 * ready said so. */
static int term_while_compiling(int (*ready)(pid_t pid, const char *dir), bool group)
{
    char dir[4096], tmp[4096];
    fresh_dir(dir, sizeof dir);
    fresh_dir(tmp, sizeof tmp);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (group)
            setpgid(0, 0);
        compile_big(dir, tmp);
    }
    if (group)
        setpgid(pid, pid); /* either may run first */
    int status, hit = 0;
    for (int i = 0; i < 200000 && !hit && waitpid(pid, &status, WNOHANG) == 0; i++) {
        hit = ready(pid, dir) > 0;
        if (!hit)
            usleep(50);
    }
    if (hit) {
        kill(group ? -pid : pid, SIGTERM);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM))
            fail_msg("status %#x", status);
    }
    assert_false(has_prefix(dir, ".so-"));
    assert_false(has_prefix(dir, ".lanes-"));
    assert_false(has_prefix(tmp, "libgccjit-"));
    assert_false(has_prefix(tmp, "cc"));
    remove_dir(dir);
    remove_dir(tmp);
    return hit;
}

static int so_temp_made(pid_t pid, const char *dir) /* remat made its temp file: gcc is generating code */
{
    (void)pid;
    return has_prefix(dir, ".so-");
}

static int driver_running(pid_t pid, const char *dir) /* the assembler or the linker runs */
{
    (void)dir;
    return has_child_process(pid);
}

static void test_jit_cache_sigterm_leaves_no_temps(void **state)
{
    (void)state;
    assert_true(term_while_compiling(so_temp_made, false));
    if (has_child_process(getpid()) < 0) {
        print_message("skipping SIGTERM while as/ld run: no /proc/PID/task/TID/children here\n");
        return;
    }
    assert_true(term_while_compiling(driver_running, false));
    assert_true(term_while_compiling(driver_running, true));
}

/* libgccjit's embedded driver installs its own SIGINT/SIGTERM/SIGHUP/SIGPIPE
 * handlers and SIGCHLD's default: a compilation puts back the program's.
 * A SIGCHLD the program ignores does not keep libgccjit from waiting for
 * its external driver (which it then would not use again). */
static void on_term(int sig)
{
    (void)sig;
}

static int handlers_kept(void)
{
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_IGN);
    signal(SIGHUP, SIG_DFL);
    if (compile_mul() != 0)
        return 1;
    struct sigaction a;
    int ok = 1;
    ok &= sigaction(SIGTERM, NULL, &a) == 0 && a.sa_handler == on_term;
    ok &= sigaction(SIGINT, NULL, &a) == 0 && a.sa_handler == on_term;
    ok &= sigaction(SIGPIPE, NULL, &a) == 0 && a.sa_handler == SIG_IGN;
    ok &= sigaction(SIGCHLD, NULL, &a) == 0 && a.sa_handler == SIG_IGN;
    ok &= sigaction(SIGHUP, NULL, &a) == 0 && a.sa_handler == SIG_DFL;
    return !ok ? 2 : rmi_cpu_jit_driver_external() ? 0 : 3;
}

static void test_jit_cache_compile_keeps_signal_handlers(void **state)
{
    (void)state;
    char dir[4096];
    fresh_dir(dir, sizeof dir);
    assert_int_equal(in_child(dir, handlers_kept), 0);
    remove_dir(dir);
}

/* gcc's driver runs as a process of its own, found on PATH (Debian's
 * x86_64-linux-gnu-gcc-12); on a PATH with as and ld but no driver, the
 * compilation is made again with the driver inside libgccjit, and the
 * program's handlers are kept there too */
static char tools_only[4096]; /* a directory holding links to as and ld only */

static int compile_without_driver(void)
{
    setenv("PATH", tools_only, 1);
    const int r = handlers_kept();
    return r == 3 ? 0 : r == 0 ? 4 : r; /* compiled, by the embedded driver */
}

static void test_jit_cache_no_driver_on_path_falls_back(void **state)
{
    (void)state;
    char dir[4096], link[4200];
    fresh_dir(dir, sizeof dir);
    fresh_dir(tools_only, sizeof tools_only);
    const char *tools[] = {"as", "ld"};
    for (int i = 0; i < 2; i++) {
        char *path = strdup(getenv("PATH")), *save = NULL; /* where this PATH has the tool */
        int found = 0;
        for (char *d = strtok_r(path, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
            char full[4200];
            snprintf(full, sizeof full, "%s/%s", d, tools[i]);
            snprintf(link, sizeof link, "%s/%s", tools_only, tools[i]);
            found = access(full, X_OK) == 0 && symlink(full, link) == 0;
        }
        free(path);
        assert_true(found);
    }
    assert_int_equal(in_child(dir, compile_without_driver), 0);
    remove_dir(dir);
    remove_dir(tools_only);
}

/* A program's own SIGINT handler (Python's, say) and a thread of its own
 * that takes the signal (blocks nothing) while another compiles: a SIGINT
 * sent to the process again and again during the compilation, as and ld
 * included, runs the program's handler and never the handler of gcc's
 * driver, which would end the process (it ran inside libgccjit once). It
 * compiles, and leaves no temporary file. */
static atomic_int int_seen, int_stop;

static void on_int(int sig)
{
    (void)sig;
    atomic_fetch_add(&int_seen, 1);
}

static void *send_ints(void *arg)
{
    (void)arg;
    while (!atomic_load(&int_stop)) {
        kill(getpid(), SIGINT);
        usleep(100);
    }
    return NULL;
}

static void test_jit_cache_sigint_from_a_thread_runs_the_programs_handler(void **state)
{
    (void)state;
    char dir[4096], tmp[4096];
    fresh_dir(dir, sizeof dir);
    fresh_dir(tmp, sizeof tmp);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(120);
        struct sigaction sa = {.sa_handler = on_int}; /* no SA_RESTART, as Python's */
        sigaction(SIGINT, &sa, NULL);
        pthread_t t;
        if (pthread_create(&t, NULL, send_ints, NULL))
            _exit(4);
        setenv("REMAT_CACHE_DIR", dir, 1);
        setenv("TMPDIR", tmp, 1);
        remat_lane_program p;
        remat_lane_buf bufs[2];
        const remat_lane_program *pp[1] = {make_big(&p, bufs)};
        remat_lane_fn fn = NULL;
        const remat_status st = remat_backend_cpu()->iface.compile_lanes(remat_backend_cpu(), 1, pp, &fn, env_cache());
        atomic_store(&int_stop, 1);
        pthread_join(t, NULL);
        struct sigaction now;
        sigaction(SIGINT, NULL, &now);
        _exit(st != REMAT_OK || !fn ? 1 : now.sa_handler != on_int ? 2 : atomic_load(&int_seen) == 0 ? 3 : 0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        fail_msg("the compiling process %s %d", WIFSIGNALED(status) ? "ended by signal" : "exited",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    assert_false(has_prefix(dir, ".so-"));
    assert_false(has_prefix(dir, ".lanes-"));
    assert_false(has_prefix(tmp, "libgccjit-"));
    assert_false(has_prefix(tmp, "cc"));
    remove_dir(dir);
    remove_dir(tmp);
}

int main(void)
{
    setenv("REMAT_JIT", "always", 1); /* the compiled loops, on scans too short for the default policy */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jit_cache_miss_then_hit),
        cmocka_unit_test(test_jit_cache_truncated_entry_rebuilt),
        cmocka_unit_test(test_jit_cache_altered_entry_rebuilt),
        cmocka_unit_test(test_jit_cache_foreign_file_rebuilt),
        cmocka_unit_test(test_jit_cache_fifo_entry_rebuilt),
        cmocka_unit_test(test_jit_cache_untrusted_entry_not_loaded),
        cmocka_unit_test(test_jit_cache_untrusted_dir_unused),
        cmocka_unit_test(test_jit_cache_off_reads_and_writes_nothing),
        cmocka_unit_test(test_jit_cache_concurrent_processes),
        cmocka_unit_test(test_jit_cache_key_is_the_program),
        cmocka_unit_test(test_jit_cache_without_libgccjit),
        cmocka_unit_test(test_jit_cache_stale_temps_swept),
        cmocka_unit_test(test_jit_cache_sigterm_leaves_no_temps),
        cmocka_unit_test(test_jit_cache_compile_keeps_signal_handlers),
        cmocka_unit_test(test_jit_cache_sigint_from_a_thread_runs_the_programs_handler),
        cmocka_unit_test(test_jit_cache_no_driver_on_path_falls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
