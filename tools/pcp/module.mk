# tools/pcp/module.mk - pcp (bin) and the file service pio-files (sbin, started by piod).
PCP_PROTO_OBJ := $(B)/tools/pcp/pcp_proto.o
PCP_OBJS      := $(B)/tools/pcp/pcp.o $(PCP_PROTO_OBJ)
PIOFILES_OBJS := $(B)/tools/pcp/pio-files.o $(PCP_PROTO_OBJ)
OBJS  += $(B)/tools/pcp/pcp.o $(B)/tools/pcp/pio-files.o $(PCP_PROTO_OBJ)
BINS  += $(B)/bin/pcp
SBINS += $(B)/sbin/pio-files

$(B)/bin/pcp: $(PCP_OBJS) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/sbin/pio-files: $(PIOFILES_OBJS) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
