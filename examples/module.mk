# examples/module.mk - the programs a user copies from: hello (plain C) and
# mpi_sim_viz (two Open MPI jobs coupled by PIO). The tests run both
# (tests/bats/mpi.bats), so they are TEST_BINS and built by `make`.
#
# MPI code is compiled by the MPI wrapper with the build's own flags and
# compiler (OMPI_CC), through its own rule rather than the gcc pattern rule,
# so the MPI include and library paths come from the wrapper only.
MPICC ?= mpicc

EXAMPLE_HELLO := $(B)/examples/hello
EXAMPLE_MPI   := $(B)/examples/mpi_sim_viz
EXAMPLE_MERGE := $(B)/examples/merged_output
TEST_BINS += $(EXAMPLE_HELLO) $(EXAMPLE_MPI) $(EXAMPLE_MERGE)
OBJS      += $(B)/examples/hello.o $(B)/examples/mpi_sim_viz.o $(B)/examples/merged_output.o

$(EXAMPLE_HELLO): $(B)/examples/hello.o $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/examples/mpi_sim_viz.o: examples/mpi_sim_viz.c $(SETTINGS)
	@mkdir -p $(@D)
	$(call msg,MPICC,$<)OMPI_CC=$(CC) $(MPICC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(EXAMPLE_MPI): $(B)/examples/mpi_sim_viz.o $(LIBPIO_A)
	$(call msg,LD,$@)OMPI_CC=$(CC) $(MPICC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/examples/merged_output.o: examples/merged_output.c $(SETTINGS)
	@mkdir -p $(@D)
	$(call msg,MPICC,$<)OMPI_CC=$(CC) $(MPICC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(EXAMPLE_MERGE): $(B)/examples/merged_output.o $(LIBPIO_A)
	$(call msg,LD,$@)OMPI_CC=$(CC) $(MPICC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
