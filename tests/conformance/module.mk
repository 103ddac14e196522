# tests/conformance/module.mk - the transport conformance suite: conformance.c holds
# every check once; each tests/conformance/test_NAME.c instantiates it for one
# transport (PIO_CONFORMANCE_TESTS("NAME", CAPS)) and becomes
# $(B)/tests/unit/test_conformance_NAME, which tests/run picks up.
CONF_SRCS  := $(filter-out $(if $(filter 0,$(WITH_UCX)),tests/conformance/test_rdma.c),\
              $(wildcard tests/conformance/test_*.c))
CONF_TESTS := $(CONF_SRCS:tests/conformance/test_%.c=$(B)/tests/unit/test_conformance_%)
CONF_OBJ   := $(B)/tests/conformance/conformance.o
UNIT_TESTS += $(CONF_TESTS)
OBJS       += $(CONF_OBJ) $(CONF_SRCS:%.c=$(B)/%.o)

$(B)/tests/unit/test_conformance_%: $(B)/tests/conformance/test_%.o $(CONF_OBJ) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(CONF_OBJ) $(LIBPIO_A) $(LDLIBS) $(call pkg,--libs,cmocka)
