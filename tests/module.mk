# tests/module.mk - cmocka unit tests: tests/unit/test_NAME.c -> one binary each,
# linked with libpio and piod's internal archive.
# (test_rma.c tests transport/rdma/ itself: only with WITH_UCX=1)
UNIT_SRCS  := $(filter-out $(if $(filter 0,$(WITH_UCX)),tests/unit/test_rma.c),\
              $(wildcard tests/unit/test_*.c))
UNIT_TESTS += $(UNIT_SRCS:%.c=$(B)/%)
OBJS       += $(UNIT_SRCS:%.c=$(B)/%.o)

$(B)/tests/unit/%: $(B)/tests/unit/%.o $(LIBPIOD_A) $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(LIBPIOD_A) $(LIBPIO_A) $(LDLIBS) $(PIOD_CRYPTO_LIBS) \
	  $(call pkg,--libs,cmocka)

# Helper programs the Bats tests run: tests/prog/NAME.c -> $(B)/tests/prog/NAME.
PROG_SRCS := $(wildcard tests/prog/*.c)
TEST_BINS += $(PROG_SRCS:%.c=$(B)/%)
OBJS      += $(PROG_SRCS:%.c=$(B)/%.o)

$(B)/tests/prog/%: $(B)/tests/prog/%.o $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(LIBPIO_A) $(LDLIBS)
