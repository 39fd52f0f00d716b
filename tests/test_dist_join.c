/*
 * test_dist_join.c — joining and leaving an MPI group (src/dist/mpi.c) in a
 * program that initialised MPI itself, on the ranks tests/mpi_run.sh
 * starts: the duplicate of MPI_COMM_WORLD is freed when the group is left
 * and when joining fails; a rank out of memory while joining (each of its
 * allocations in turn, core/alloc.h's hook) fails every rank's
 * remat_dist_init with its message instead of leaving them in
 * MPI_Comm_dup. A duplicate is seen through an attribute of
 * MPI_COMM_WORLD, which MPI copies into it and deletes with it.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "remat/dist.h"

static int copies, deletes;

static int copy_attr(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag)
{
    (void)old, (void)key, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_attr(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm, (void)key, (void)val, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static int failed, rank;
#define CHECK(cond, ...)                                                                                             \
    do {                                                                                                            \
        if (!(cond)) {                                                                                              \
            fprintf(stderr, "test_dist_join: rank %d: ", rank);                                                    \
            fprintf(stderr, __VA_ARGS__);                                                                           \
            fputc('\n', stderr);                                                                                    \
            failed = 1;                                                                                             \
        }                                                                                                           \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, key;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_create_keyval(copy_attr, delete_attr, &key, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, key, &key);

    remat_dist *d = NULL;
    CHECK(remat_dist_init(&argc, &argv, &d) == REMAT_OK, "remat_dist_init: %s", remat_last_error());
    CHECK(remat_dist_size(d) == size, "a group of %d ranks, not %d", remat_dist_size(d), size);
    remat_dist_finalize(d);
    CHECK(copies == 1 && deletes == 1, "joined and left: %d duplicates made, %d freed", copies, deletes);

    /* the last rank's allocation k fails while joining, k = 0, 1, ...: every
     * rank fails with its message, or (k past the last) every rank joins */
    int victim = size - 1, k;
    remat_status st = REMAT_ERR_NOMEM;
    for (k = 0; k < 8 && st != REMAT_OK; k++) {
        rmi_alloc_fail_once(rank == victim ? k : -1);
        d = NULL;
        st = remat_dist_init(&argc, &argv, &d);
        rmi_alloc_fail_after(-1);
        int mine = st, lowest = st, highest = st;
        MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &highest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(lowest == highest, "allocation %d of rank %d failing: statuses %d to %d across ranks", k, victim,
              lowest, highest);
        if (st == REMAT_OK) {
            remat_dist_finalize(d);
        } else {
            CHECK(st == REMAT_ERR_NOMEM && strstr(remat_last_error(), "out of memory"),
                  "allocation %d of rank %d failing: %s (%s)", k, victim, remat_status_name(st), remat_last_error());
            CHECK(d == NULL, "a failed join hands out a group");
        }
        CHECK(copies == deletes, "allocation %d of rank %d failing: %d duplicates made, %d freed", k, victim, copies,
              deletes);
    }
    CHECK(st == REMAT_OK, "still failing after %d allocations of rank %d failed in turn", k, victim);
    CHECK(k > 1, "no allocation of joining failed");
    MPI_Comm_free_keyval(&key);
    MPI_Finalize();
    if (rank == 0 && !failed)
        printf("test_dist_join: %d ranks: ok (%d allocations of rank %d failed in turn)\n", size, k - 1, victim);
    return failed;
}
