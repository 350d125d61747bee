/*
 * Picks the Open MPI flavour the glue is compiled for.
 *
 * Everything that differs between Open MPI release series lives in one
 * header (flavour_vNN.h: types and macros) and one C file (flavour_vNN.c:
 * functions whose bodies differ) per flavour; component.c and ompi_calls.c
 * only use the names defined there.  The per-communicator module follows the
 * coll framework API (coll_api2.c: API 2.x, i.e. 4.1 and 5.0).  build.rs sets
 * SHARM_OMPI_FLAVOUR (41, 50) from the installed mpi.h or the
 * SHARM_OMPI_FLAVOUR environment variable and compiles the matching files.
 * Open MPI 6 (coll API 3.0.0: size_t counts, modules install their own
 * functions) would add flavour_v60.{h,c}, coll_api3.c and a branch here and
 * in build.rs.
 */
#ifndef SHARM_FLAVOUR_H
#define SHARM_FLAVOUR_H

#include "ompi_config.h"

#if !defined(SHARM_OMPI_FLAVOUR)
#error "SHARM_OMPI_FLAVOUR is not set (build.rs defines it)"
#elif SHARM_OMPI_FLAVOUR == 41
#include "flavour_v41.h"
#elif SHARM_OMPI_FLAVOUR == 50
#include "flavour_v50.h"
#else
#error "unknown SHARM_OMPI_FLAVOUR"
#endif

/* A forced flavour (SHARM_OMPI_FLAVOUR in the environment) must still match
 * the headers: the structures differ, so a mismatch would load and crash. */
#if OMPI_MAJOR_VERSION != SHARM_FLAVOUR_OMPI_MAJOR
#error "SHARM_OMPI_FLAVOUR does not match the Open MPI headers found (OMPI_MAJOR_VERSION)"
#endif

#endif
