/*
 * Declarations shared by the C files of the glue (never seen by Rust).
 */
#ifndef SHARM_GLUE_INTERNAL_H
#define SHARM_GLUE_INTERNAL_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/op/op.h"

#include "sharm_glue.h"

/* Version-specific types and macros (sharm_coll_component_t, ...). */
#include "flavour.h"

/* Bytes Rust reserves for the component struct (see src/lib.rs). */
#define SHARM_COMPONENT_STORAGE_BYTES 4096

/* A new module serving one communicator with Rust state `state` (owned by
 * the module from then on); NULL if out of memory.  coll_api2.c. */
mca_coll_base_module_t *sharm_glue_module_new(void *state);

/* The component's opal_output stream (-1 before open). */
extern int sharm_output;

extern const struct sharm_rs_entries *sharm_rs;

/* Copies the malloc'd string `str` (may be NULL) into buf[cap] and frees it;
 * returns its length, or 0 when absent or too long. */
int32_t sharm_glue_copy_out(char *str, char *buf, int32_t cap);

#endif
