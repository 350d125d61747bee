/*
 * stderr_file.h - each process of a test job writes its standard error
 * (where Open MPI's output, sharm's trace included, goes) to a file of its
 * own, DIR/rank.<rank>, when SHARM_CHECK_STDERR_DIR=DIR is set; the Rust
 * side (tests/support/stderr_files.rs) reads the files back in rank order.
 *
 * Why: through mpirun's one stream, a line that crossed the end of one read
 * from a process's pipe came out split around another process's lines (at
 * verbose 100 every call prints a line), and a test looking for that line
 * missed it: 1 run in 3 of tests/rules.rs's movements test, 2 of 19 of
 * tests/single_copy.rs's short-streams test.  mpirun's --output-filename
 * does this on Open MPI 4.1 but fails on 5.0.7 (PMIX_ERR_EXISTS).
 *
 * Call it first in main, before MPI_Init: Open MPI may print from there on.
 */
#ifndef SHARM_STDERR_FILE_H
#define SHARM_STDERR_FILE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void stderr_to_file(void)
{
    const char *dir = getenv("SHARM_CHECK_STDERR_DIR");
    /* Open MPI 4.1 and 5.0 both set it in every process they start. */
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!dir || !rank) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/rank.%s", dir, rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 2) < 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    close(fd);
}

#endif
