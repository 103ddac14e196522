# pfs/module.mk - the parallel file system: libpfs (client), pfs-mds (metadata
# server, SQLite), pfs-iod (I/O server), the pfs command, and its unit tests.
# Every piece is a PIO application: all of them link libpio.
PFS_CORE_OBJS := $(B)/pfs/proto.o $(B)/pfs/layout.o $(B)/pfs/perm.o
# libpfs.a carries the one base object it uses beyond pio.h (the fuzz
# capture hook): installed, it links against libpio.so, which exports only
# the API.
LIBPFS_OBJS   := $(PFS_CORE_OBJS) $(B)/pfs/client.o $(B)/common/capture.o
LIBPFS_A      := $(B)/lib/libpfs.a
LIBPFS_SO     := $(B)/lib/libpfs.so
PFS_MDS_OBJS  := $(B)/pfs/mds.o $(B)/pfs/mdb.o $(B)/pfs/srv.o $(PFS_CORE_OBJS)
PFS_IOD_OBJS  := $(B)/pfs/iod.o $(B)/pfs/qos.o $(B)/pfs/iostat.o $(B)/pfs/store_posix.o $(B)/pfs/srv.o $(PFS_CORE_OBJS)
PFS_CLI_OBJS  := $(B)/pfs/cli.o
OBJS  += $(sort $(LIBPFS_OBJS) $(PFS_MDS_OBJS) $(PFS_IOD_OBJS) $(PFS_CLI_OBJS))
BINS  += $(B)/bin/pfs
SBINS += $(B)/sbin/pfs-mds $(B)/sbin/pfs-iod
INSTALL_LIBS += $(LIBPFS_A)
INSTALL_VERSIONED_SOS += $(LIBPFS_SO)
INSTALL_INCLUDES += pfs/pfs.h
PC_FILES += pfs/pfs.pc.in

SQLITE_LIBS := $(call pkg,--libs,sqlite3)

$(LIBPFS_A): $(LIBPFS_OBJS)
	@mkdir -p $(@D)
	$(call msg,AR,$@)rm -f $@ && ar rcs $@ $^

# libpfs.so exports the API of pfs.h alone, as libpio.so does pio.h's: its
# objects are hidden but for what pfs.h declares (build.bats checks nm -D).
# It needs libpio.so (the API of pio.h).
$(LIBPFS_OBJS): CFLAGS += -fvisibility=hidden
$(LIBPFS_SO): $(LIBPFS_OBJS) pfs/libpfs.map $(LIBPIO_SO)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) -shared -Wl,-soname,libpfs.so.$(PIO_SOVERSION) \
	  -Wl,--version-script=pfs/libpfs.map $(LDFLAGS) -o $@ $(LIBPFS_OBJS) $(LIBPIO_SO) $(LDLIBS)

$(B)/bin/pfs: $(PFS_CLI_OBJS) $(CLI_JSON_OBJ) $(LIBPFS_A) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(JSONC_LIBS)

$(B)/sbin/pfs-mds: $(PFS_MDS_OBJS) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(SQLITE_LIBS)

$(B)/sbin/pfs-iod: $(PFS_IOD_OBJS) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Unit tests of pfs (tests/unit/test_pfs_*.c): each links the pfs objects it
# tests, named below, besides libpio (this pattern beats tests/module.mk's).
$(B)/tests/unit/test_pfs_layout: $(PFS_CORE_OBJS)
$(B)/tests/unit/test_pfs_mdb: $(B)/pfs/mdb.o $(PFS_CORE_OBJS)
$(B)/tests/unit/test_pfs_qos: $(B)/pfs/qos.o $(B)/pfs/srv.o $(B)/pfs/iostat.o $(PFS_CORE_OBJS)
$(B)/tests/unit/test_pfs_%: $(B)/tests/unit/test_pfs_%.o $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LIBPIO_A) $(LDLIBS) \
	  $(SQLITE_LIBS) $(call pkg,--libs,cmocka)

# `make fuzz`: $(B)/fuzz/fuzz_pfs, libFuzzer + ASan over pfs_msg_decode and
# pfs_dirent_next.
FUZZ_BINS += $(B)/fuzz/fuzz_pfs
FUZZ_BINS += $(B)/fuzz/fuzz_qos
$(B)/fuzz/fuzz_qos: pfs/fuzz_qos.c pfs/qos.c pfs/qos.h pfs/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  pfs/fuzz_qos.c pfs/qos.c $(FUZZ_LIBS)
$(B)/fuzz/fuzz_pfs: pfs/fuzz_pfs.c pfs/proto.c pfs/proto.h pfs/module.mk $(FUZZ_CAPTURE)
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  pfs/fuzz_pfs.c pfs/proto.c $(FUZZ_CAPTURE) $(FUZZ_LIBS)

# tests/prog/pfs-check drives libpfs for the tests (this rule beats the
# generic one in tests/module.mk: it needs libpfs too).
$(B)/tests/prog/pfs-check: $(B)/tests/prog/pfs-check.o $(LIBPFS_A) $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# GAS (gather-arrange-scatter, issue 11) lives in pfs/gas/, prefix gas_:
# gas-dispatcher (a PIO client of the I/O servers, one per compute host),
# gas-stat (its counters), and libpgas.so, the LD_PRELOAD library that sends
# `pgas:` paths to the dispatcher. libpgas.so is loaded into programs built
# without sanitizers (cp, dd, gfortran's runtime), so it is always built
# without them: a sanitizer runtime must come first in a process, and a
# preloaded library cannot ask for that. It links libc only, and
# common/interpose.c (what it shares with libanco.so), not libpio.
GAS_OBJS      := $(B)/pfs/gas/arrange.o $(B)/pfs/gas/wire.o
GAS_DISP_OBJS := $(B)/pfs/gas/dispatcher.o $(B)/pfs/srv.o $(GAS_OBJS)
GAS_STAT_OBJS := $(B)/pfs/gas/stat.o $(B)/pfs/gas/wire.o
LIBPGAS_SO    := $(B)/lib/libpgas.so
LIBPGAS_HOOKS := $(B)/pfs/gas/pic/preload.o
LIBPGAS_OBJS  := $(LIBPGAS_HOOKS) $(B)/pfs/gas/pic/preload_conn.o $(B)/pfs/gas/pic/preload_file.o \
  $(B)/pfs/gas/pic/wire.o
LIBPGAS_IP    := $(B)/pfs/gas/pic/interpose.o
OBJS  += $(sort $(GAS_OBJS) $(GAS_DISP_OBJS) $(GAS_STAT_OBJS))
BINS  += $(B)/bin/gas-stat
SBINS += $(B)/sbin/gas-dispatcher
TEST_BINS += $(LIBPGAS_SO)
INSTALL_SOS += $(LIBPGAS_SO)

$(B)/sbin/gas-dispatcher: $(GAS_DISP_OBJS) $(LIBPFS_A) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# gas-stat takes from libpio.a only the --version line (common/cli.c,
# libpio/version.c): it is not a PIO application.
$(B)/bin/gas-stat: $(GAS_STAT_OBJS) $(CLI_JSON_OBJ) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(JSONC_LIBS)

# everything but the hooks (preload.o) is linked in hidden: a program's own
# symbols never clash with the connection, the files, the wire codec or the
# interposition support
$(filter-out $(LIBPGAS_HOOKS),$(LIBPGAS_OBJS)) $(LIBPGAS_IP): PIC_VIS := -fvisibility=hidden
$(LIBPGAS_OBJS): $(B)/pfs/gas/pic/%.o: pfs/gas/%.c $(SETTINGS) | $(PUB_HDRS)
	@mkdir -p $(@D)
	$(call msg,CC,$<)$(CC) $(CPPFLAGS) $(call inc,$<) $(filter-out $(SANFLAGS),$(CFLAGS)) $(PIC_VIS) -c -o $@ $<
$(LIBPGAS_IP): common/interpose.c $(SETTINGS) | $(PUB_HDRS)
	@mkdir -p $(@D)
	$(call msg,CC,$<)$(CC) $(CPPFLAGS) $(call inc,$<) $(filter-out $(SANFLAGS),$(CFLAGS)) $(PIC_VIS) -c -o $@ $<
-include $(LIBPGAS_OBJS:.o=.d) $(LIBPGAS_IP:.o=.d)

$(LIBPGAS_SO): $(LIBPGAS_OBJS) $(LIBPGAS_IP)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) -shared -pthread -Wl,-soname,libpgas.so -o $@ $^ -ldl

$(B)/tests/unit/test_gas_arrange: $(B)/tests/unit/test_gas_arrange.o $(GAS_OBJS) $(PFS_CORE_OBJS) \
  $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(call pkg,--libs,cmocka)

# `make fuzz`: $(B)/fuzz/fuzz_gas, libFuzzer + ASan over the GAS frame decoder.
FUZZ_BINS += $(B)/fuzz/fuzz_gas
$(B)/fuzz/fuzz_gas: pfs/gas/fuzz_gas.c pfs/gas/wire.c pfs/gas/wire.h pfs/module.mk
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  pfs/gas/fuzz_gas.c pfs/gas/wire.c
