# examples/module.mk - the programs a user copies from: hello (plain C),
# mpi_sim_py (an MPI simulation feeding examples/python/analysis.py),
# mpi_sim_viz (two Open MPI jobs coupled by PIO), merged_output and
# merged_dataset (remote merged output, raw and HDF5). The tests run them
# (tests/bats/mpi.bats, merge.bats), so they are TEST_BINS and built by `make`.
#
# MPI code is compiled by the MPI wrapper with the build's own flags and
# compiler (OMPI_CC), through its own rule rather than the gcc pattern rule,
# so the MPI include and library paths come from the wrapper only.
MPICC ?= mpicc

EXAMPLE_HELLO := $(B)/examples/hello
MPI_EXAMPLES  := mpi_sim_viz merged_output merged_dataset heat3d mpi_sim_py
EXAMPLE_MPI   := $(B)/examples/mpi_sim_viz
EXAMPLE_MERGE := $(B)/examples/merged_output
TEST_BINS += $(EXAMPLE_HELLO) $(MPI_EXAMPLES:%=$(B)/examples/%)
OBJS      += $(B)/examples/hello.o $(MPI_EXAMPLES:%=$(B)/examples/%.o)

$(EXAMPLE_HELLO): $(B)/examples/hello.o $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(MPI_EXAMPLES:%=$(B)/examples/%.o): $(B)/examples/%.o: examples/%.c $(SETTINGS) | $(PUB_HDRS)
	@mkdir -p $(@D)
	$(call msg,MPICC,$<)OMPI_CC=$(CC) $(MPICC) $(CPPFLAGS) $(call inc,$<) $(CFLAGS) -c -o $@ $<

$(MPI_EXAMPLES:%=$(B)/examples/%): $(B)/examples/%: $(B)/examples/%.o $(LIBPIO_A)
	$(call msg,LD,$@)OMPI_CC=$(CC) $(MPICC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# heat3d can also write its steps to a local HDF5 file (--h5, the feed's
# baseline in bench/viz.sh): the parallel HDF5 for Open MPI, never VTK's.
H5_MPI_CFLAGS := $(call pkg,--cflags,hdf5-openmpi)
H5_MPI_LIBS   := $(call pkg,--libs,hdf5-openmpi)
$(B)/examples/heat3d.o: CPPFLAGS += $(H5_MPI_CFLAGS)
$(B)/examples/heat3d: LDLIBS += $(H5_MPI_LIBS)

# mpi_sim_py joins with PIO_Init_comm (pio_mpi.h, beside pio.h once installed)
$(B)/examples/mpi_sim_py.o: | $(PUB_INC)/pio_mpi.h
