# tools/pcp/module.mk - pcp (bin) and the file service pio-files (sbin, started by piod).
# (pcp_proto.c, the file service protocol, is in libpio: PIO_File_* speak it too)
PCP_OBJS      := $(B)/tools/pcp/pcp.o
PIOFILES_OBJS := $(B)/tools/pcp/pio-files.o
OBJS  += $(B)/tools/pcp/pcp.o $(B)/tools/pcp/pio-files.o
BINS  += $(B)/bin/pcp
SBINS += $(B)/sbin/pio-files

$(B)/bin/pcp: $(PCP_OBJS) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/sbin/pio-files: $(PIOFILES_OBJS) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
