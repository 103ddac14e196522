# examples/fortran/module.mk - the Fortran examples: hello (no MPI) and mpi_sim_viz
# (two Open MPI jobs coupled by PIO), twins of the C ones and wire-compatible
# with them. The tests run them (tests/bats/fortran.bats), so they are
# TEST_BINS and built by `make`. Both are compiled by the MPI wrapper
# (mpif90) with the build's compiler and flags, as a user would.
FORT_EXAMPLES := hello mpi_sim_viz
FORT_EX_BINS  := $(FORT_EXAMPLES:%=$(B)/examples/fortran/%)
TEST_BINS     += $(FORT_EX_BINS)

$(FORT_EX_BINS:%=%.o): $(B)/examples/fortran/%.o: examples/fortran/%.f90 $(PIO_MOD_O) $(SETTINGS)
	@mkdir -p $(@D)
	$(call msg,MPIFC,$<)OMPI_FC=$(FC) $(MPIFC) $(FFLAGS) $(FFLAGS_EXACT) -I$(FORT_DIR) -J$(@D) \
	  -c -o $@ $<

$(FORT_EX_BINS): %: %.o $(LIBPIOF_A) $(LIBPIO_A)
	$(call msg,LD,$@)OMPI_FC=$(FC) $(MPIFC) $(LDFLAGS) -o $@ $< $(LIBPIOF_A) $(LIBPIO_A) $(LDLIBS)
