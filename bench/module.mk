# bench/module.mk - benchmark helper programs: bench/NAME.c -> $(B)/bench/NAME.
# SPDX-License-Identifier: BSD-3-Clause
# tcp_pingpong is the plain-socket baseline of bench/pingpong.sh (no libpio);
# skew is the sender/receiver of bench/skew.sh (linked with libpio). The
# scripts themselves (bench/*.sh) run from `make bench` (bench/run-all.sh).
BENCH_PROGS := tcp_pingpong
BENCH_BINS  := $(BENCH_PROGS:%=$(B)/bench/%)
TEST_BINS   += $(BENCH_BINS) $(B)/bench/skew
OBJS        += $(BENCH_PROGS:%=$(B)/bench/%.o) $(B)/bench/skew.o

# the size syntax, data pattern and measuring loop are pio-perf's own (one
# parser, one loop for both: tools/pio-perf/perf_sizes.c, perf_loop.c)
$(BENCH_BINS): $(B)/bench/%: $(B)/bench/%.o $(B)/tools/pio-perf/perf_sizes.o \
		$(B)/tools/pio-perf/perf_loop.o
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^

# copy-pipe is the loopback baseline of bench/scale.sh: PIO's four copies
# per message between plain process pairs (no libpio)
TEST_BINS += $(B)/bench/copy-pipe
OBJS      += $(B)/bench/copy_pipe.o

$(B)/bench/copy-pipe: $(B)/bench/copy_pipe.o
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $<

# page-reach: memory speed against the page translations in play (P
# processes each touching M MiB of one shared region): why libpio copies only
# PIO_SEND_AHEAD ahead and piod grants within grant-budget (design notes)
TEST_BINS += $(B)/bench/page-reach
OBJS      += $(B)/bench/page_reach.o

$(B)/bench/page-reach: $(B)/bench/page_reach.o
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $<

$(B)/bench/skew: $(B)/bench/skew.o $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(LIBPIO_A) $(LDLIBS)

# GAS (bench/gas.sh): gas-btio is the BTIO-like writer (plain C: it writes
# with pwrite or lseek+write, to a local file or, under libpgas.so, to a
# `pgas:` path); gas-btio-mpi the same pattern through MPI-IO (ROMIO
# collective buffering, or independent writes); gas-ipc measures the two ways
# from a process to the dispatcher (Unix socket, shared-memory ring).
GAS_BENCH := $(B)/bench/gas-btio $(B)/bench/gas-ipc
TEST_BINS += $(GAS_BENCH) $(B)/bench/gas-btio-mpi
OBJS      += $(B)/bench/gas_btio.o $(B)/bench/gas_ipc.o

$(GAS_BENCH): $(B)/bench/gas-%: $(B)/bench/gas_%.o
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $< -lrt

$(B)/bench/gas_btio_mpi.o: bench/gas_btio_mpi.c $(SETTINGS) | $(PUB_HDRS)
	@mkdir -p $(@D)
	$(call msg,MPICC,$<)OMPI_CC=$(CC) $(MPICC) $(CPPFLAGS) $(call inc,$<) $(CFLAGS) -c -o $@ $<

$(B)/bench/gas-btio-mpi: $(B)/bench/gas_btio_mpi.o
	$(call msg,LD,$@)OMPI_CC=$(CC) $(MPICC) $(LDFLAGS) -o $@ $^

# anco (bench/anco.sh): anco-read is one reader process (POSIX preads or
# anco, sequential, random or strided; it also writes the pattern file);
# anco-read-mpi the strided pattern through MPI-IO collective reads.
TEST_BINS += $(B)/bench/anco-read $(B)/bench/anco-read-mpi
OBJS      += $(B)/bench/anco_read.o

$(B)/bench/anco-read: $(B)/bench/anco_read.o $(ANCO_OBJS) $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/bench/anco_read_mpi.o: bench/anco_read_mpi.c $(SETTINGS) | $(PUB_HDRS)
	@mkdir -p $(@D)
	$(call msg,MPICC,$<)OMPI_CC=$(CC) $(MPICC) $(CPPFLAGS) $(call inc,$<) $(CFLAGS) -c -o $@ $<

$(B)/bench/anco-read-mpi: $(B)/bench/anco_read_mpi.o
	$(call msg,LD,$@)OMPI_CC=$(CC) $(MPICC) $(LDFLAGS) -o $@ $^

# copy-rotate bounds bench/scale.sh's loopback target: the copies of the
# processes' own buffers alone, with as many processes as N pairs have
TEST_BINS += $(B)/bench/copy-rotate
OBJS      += $(B)/bench/copy_rotate.o

$(B)/bench/copy-rotate: $(B)/bench/copy_rotate.o
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $<

# GAS with unmodified applications (bench/gas_apps.sh): gas-btio-f writes
# gas-btio's file with Fortran direct-access I/O (compiled by the MPI
# wrapper, as the Fortran examples are); gas-ior is an IOR-like MPI writer
# (POSIX lseek+write, or MPI-IO collective writes).
TEST_BINS += $(if $(filter 1,$(WITH_FORTRAN)),$(B)/bench/gas-btio-f) $(B)/bench/gas-ior

$(B)/bench/gas_btio_f.o: bench/gas_btio_f.f90 $(SETTINGS)
	@mkdir -p $(@D)
	$(call msg,MPIFC,$<)OMPI_FC=$(FC) $(MPIFC) $(FFLAGS) -J$(@D) -c -o $@ $<

$(B)/bench/gas-btio-f: $(B)/bench/gas_btio_f.o
	$(call msg,LD,$@)OMPI_FC=$(FC) $(MPIFC) $(LDFLAGS) -o $@ $<

$(B)/bench/gas_ior.o: bench/gas_ior.c $(SETTINGS) | $(PUB_HDRS)
	@mkdir -p $(@D)
	$(call msg,MPICC,$<)OMPI_CC=$(CC) $(MPICC) $(CPPFLAGS) $(call inc,$<) $(CFLAGS) -c -o $@ $<

$(B)/bench/gas-ior: $(B)/bench/gas_ior.o
	$(call msg,LD,$@)OMPI_CC=$(CC) $(MPICC) $(LDFLAGS) -o $@ $^
