# tools/pcp/module.mk - pcp (bin) and the file service pio-files (sbin, started by piod).
# (common/wire/pcp_proto.c, the file service protocol, is in libpio:
# PIO_File_* speak it too)
# pcp writes --json through common/cli_json.c (json-c).
# pio-files writes HDF5-mode merged output with the serial libhdf5 (it uses no MPI).
PCP_OBJS      := $(B)/tools/pcp/pcp.o $(B)/tools/pcp/orphan.o
PIOFILES_OBJS := $(B)/tools/pcp/pio-files.o $(B)/tools/pcp/files_h5.o $(B)/tools/pcp/orphan.o
OBJS  += $(sort $(PCP_OBJS) $(PIOFILES_OBJS))
BINS  += $(B)/bin/pcp
SBINS += $(B)/sbin/pio-files

H5_SERIAL_CFLAGS := $(call pkg,--cflags,hdf5-serial)
H5_SERIAL_LIBS   := $(call pkg,--libs,hdf5-serial)
$(B)/tools/pcp/files_h5.o: CPPFLAGS += $(H5_SERIAL_CFLAGS)

$(B)/bin/pcp: $(PCP_OBJS) $(CLI_JSON_OBJ) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(JSONC_LIBS)

$(B)/sbin/pio-files: $(PIOFILES_OBJS) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(H5_SERIAL_LIBS)

# `make fuzz`: $(B)/fuzz/fuzz_pcp, libFuzzer + ASan over pcp_msg_decode
# (FUZZ_CC, FUZZ_CFLAGS, FUZZ_LIBS from common/wire/module.mk).
FUZZ_BINS += $(B)/fuzz/fuzz_pcp
$(B)/fuzz/fuzz_pcp: tools/pcp/fuzz_pcp.c common/wire/pcp_proto.c common/wire/pcp_proto.h tools/pcp/module.mk \
  $(FUZZ_CAPTURE)
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)$(FUZZ_CC) -fsanitize=fuzzer,address $(FUZZ_CFLAGS) -o $@ \
	  tools/pcp/fuzz_pcp.c common/wire/pcp_proto.c $(FUZZ_CAPTURE) $(FUZZ_LIBS)
