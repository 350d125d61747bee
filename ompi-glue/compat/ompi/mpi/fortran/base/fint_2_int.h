/*
 * Compatibility header.
 *
 * Debian's libopenmpi-dev ships ompi/op/op.h, which includes this Fortran
 * helper header, but not the header itself.  op.h's inline ompi_op_reduce
 * uses OMPI_INT_2_FINT for user-defined Fortran operations; Debian builds
 * Open MPI with MPI_Fint == int, for which the real header defines the
 * conversions as identities.  The include path puts this directory after
 * Open MPI's own, so an installation that does ship the file wins.
 */
#ifndef SHARM_COMPAT_FINT_2_INT_H
#define SHARM_COMPAT_FINT_2_INT_H

#ifndef OMPI_INT_2_FINT
#define OMPI_INT_2_FINT(a) (a)
#endif
#ifndef OMPI_FINT_2_INT
#define OMPI_FINT_2_INT(a) (a)
#endif

#endif
