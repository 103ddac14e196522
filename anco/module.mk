# anco/module.mk - anco, the cooperative read cache over one-sided PIO
# transfers (issue 12). So far the pure parts: the replacement lists and the
# directories' encoding and placement, with their unit tests.
ANCO_OBJS := $(B)/anco/lists.o $(B)/anco/dir.o $(B)/anco/entry.o $(B)/anco/core.o
OBJS += $(ANCO_OBJS)

$(B)/tests/unit/test_anco: $(B)/tests/unit/test_anco.o $(ANCO_OBJS) $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(call pkg,--libs,cmocka)
