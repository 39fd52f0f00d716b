/*
 * cuda_lanes_ptx.c — compiles lane programs (lane_io.h text, as
 * REMAT_DUMP_LANES writes them) to PTX with NVRTC and the PTX to sm_<arch>
 * SASS with ptxas; no GPU needed. Exit 0 when every program compiled, 1 on
 * the first error (naming the file, with NVRTC's or ptxas's log), 77 when
 * NVRTC cannot be loaded (the reason printed).
 *
 *   cuda_lanes_ptx --ptxas /usr/local/cuda/bin/ptxas --arch 90 DIR|FILE...
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/lane_io.h"
#include "core/alloc.h"
#include "kernels/cuda/lanes_gen.h"
#include "kernels/cuda/nvrtc.h"
#include "remat/status.h"

typedef struct {
    const char *ptxas, *arch, *tmp;
    int n, serial, failed;
} run;

static int ptxas_file(const run *r, const char *ptx_path, const char *what)
{
    char sm[32], out[4096 + 16];
    snprintf(sm, sizeof sm, "-arch=sm_%s", r->arch);
    snprintf(out, sizeof out, "%s/out.cubin", r->tmp);
    pid_t pid = fork();
    if (pid == 0) {
        execl(r->ptxas, r->ptxas, sm, "-O3", "-o", out, ptx_path, (char *)NULL);
        perror(r->ptxas);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "cuda_lanes_ptx: %s: ptxas %s failed (PTX kept in %s)\n", what, sm, ptx_path);
        return 0;
    }
    return 1;
}

static int one(run *r, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 0;
    }
    remat_lane_program p;
    remat_status st = rmi_lane_program_read(f, &p);
    fclose(f);
    char *src = NULL, *ptx = NULL, *log = NULL;
    size_t n = 0;
    remat_cuda_lanes_info info;
    int ok = 0;
    if (st != REMAT_OK) {
        fprintf(stderr, "cuda_lanes_ptx: %s: %s\n", path, remat_last_error());
        goto out;
    }
    if ((st = rmi_cuda_lanes_source(&p, "remat_lanes", &src, &info)) != REMAT_OK) {
        fprintf(stderr, "cuda_lanes_ptx: %s: no CUDA source: %s\n", path, remat_last_error());
        goto out;
    }
    char arch[32];
    snprintf(arch, sizeof arch, "compute_%s", r->arch);
    st = rmi_nvrtc_compile(src, path, rmi_cuda_lanes_options, arch, REMAT_NVRTC_PTX, &ptx, &n, &log);
    if (st != REMAT_OK) {
        fprintf(stderr, "cuda_lanes_ptx: %s: %s\n%s\n--- source ---\n%s\n", path, remat_last_error(), log ? log : "",
                src);
        goto out;
    }
    if (r->ptxas) {
        char ptx_path[4096 + 16];
        snprintf(ptx_path, sizeof ptx_path, "%s/lanes.ptx", r->tmp);
        FILE *o = fopen(ptx_path, "w");
        const int wrote = o && fwrite(ptx, 1, n, o) == n;
        if (!o || fclose(o) != 0 || !wrote) {
            fprintf(stderr, "cuda_lanes_ptx: cannot write %s\n", ptx_path);
            goto out;
        }
        if (!ptxas_file(r, ptx_path, path))
            goto out;
    }
    r->n++;
    r->serial += info.serial;
    ok = 1;
out:
    rmi_free(src), rmi_free(ptx), rmi_free(log);
    rmi_lane_program_release(&p);
    return ok;
}

static int walk(run *r, const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return one(r, path);
    int ok = 1;
    for (struct dirent *e; ok && (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".txt") != 0)
            continue;
        char full[8192];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        ok = one(r, full);
    }
    closedir(d);
    return ok;
}

int main(int argc, char **argv)
{
    run r = {.arch = "90"};
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "--ptxas") == 0)
            r.ptxas = argv[i + 1];
        else if (strcmp(argv[i], "--arch") == 0)
            r.arch = argv[i + 1];
        else
            break;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: cuda_lanes_ptx [--ptxas PATH] [--arch 90] DIR|FILE...\n");
        return 2;
    }
    const char *why = NULL;
    if (!rmi_nvrtc_available(&why)) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    char tmp[] = "/tmp/cuda_lanes_ptx.XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    r.tmp = tmp;
    int ok = 1;
    for (; ok && i < argc; i++)
        ok = walk(&r, argv[i]);
    if (ok) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0)
            fprintf(stderr, "cuda_lanes_ptx: could not remove %s\n", tmp);
    }
    printf("cuda_lanes_ptx: %d lane programs (%d one thread per lane, %d serial) -> PTX (NVRTC %d) -> sm_%s%s: %s\n",
           r.n, r.n - r.serial, r.serial, rmi_nvrtc_version(), r.arch, r.ptxas ? " SASS (ptxas)" : " (PTX only)",
           ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
