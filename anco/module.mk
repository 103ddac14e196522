# anco/module.mk - anco, the cooperative read cache over one-sided PIO
# transfers (issue 12): the core objects (linked into the tests and the
# benchmark programs), and libanco.so, the LD_PRELOAD library that serves
# read-only opens under $ANCO_PATHS through the cache. libanco.so links
# libpio.a (position-independent, as every object here); in sanitizer builds a program run under it needs the
# sanitizer's runtime preloaded first (tests/bats/anco_preload.bats).
ANCO_OBJS := $(B)/anco/lists.o $(B)/anco/dir.o $(B)/anco/entry.o $(B)/anco/core.o \
  $(B)/anco/anco.o $(B)/anco/store.o
LIBANCO_SO := $(B)/lib/libanco.so
# what libanco.so shares with libpgas.so (common/interpose.c): not in libpio,
# linked in hidden so that a program's own symbols never clash with it
ANCO_IP := $(B)/common/interpose.o
OBJS += $(ANCO_OBJS) $(B)/anco/preload.o $(ANCO_IP)
TEST_BINS += $(LIBANCO_SO)
INSTALL_SOS += $(LIBANCO_SO)
INSTALL_INCLUDES += anco/anco.h

$(B)/tests/unit/test_anco: $(B)/tests/unit/test_anco.o $(ANCO_OBJS) $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(call pkg,--libs,cmocka)

# the test programs of anco.bats and anco_preload.bats use anco's internals
$(B)/tests/prog/anco-job: $(B)/tests/prog/anco-job.o $(ANCO_OBJS) $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(ANCO_IP): CFLAGS += -fvisibility=hidden
$(LIBANCO_SO): $(B)/anco/preload.o $(ANCO_IP) $(ANCO_OBJS) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) -shared $(LDFLAGS) -Wl,-soname,libanco.so -o $@ \
	  $(B)/anco/preload.o $(ANCO_IP) $(ANCO_OBJS) $(LIBPIO_A) $(LDLIBS) -ldl

# anco_preload.bats' MPI reader (plain POSIX reads; it knows nothing about
# anco), compiled by the MPI wrapper as bench/module.mk does gas-btio-mpi
MPICC ?= mpicc
ANCO_MPI_READ := $(B)/tests/mpi/anco-mpi-read
TEST_BINS += $(ANCO_MPI_READ)
OBJS      += $(B)/tests/mpi/anco_mpi_read.o

$(B)/tests/mpi/anco_mpi_read.o: tests/mpi/anco_mpi_read.c $(SETTINGS) | $(PUB_HDRS)
	@mkdir -p $(@D)
	$(call msg,MPICC,$<)OMPI_CC=$(CC) $(MPICC) $(CPPFLAGS) $(call inc,$<) $(CFLAGS) -c -o $@ $<

$(ANCO_MPI_READ): $(B)/tests/mpi/anco_mpi_read.o
	$(call msg,LD,$@)OMPI_CC=$(CC) $(MPICC) $(LDFLAGS) -o $@ $^
