# tests/module.mk - cmocka unit tests: tests/unit/test_NAME.c -> one binary each,
# linked with libpio and piod's internal archive.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_TESTS += $(UNIT_SRCS:%.c=$(B)/%)
OBJS       += $(UNIT_SRCS:%.c=$(B)/%.o)

$(B)/tests/unit/%: $(B)/tests/unit/%.o $(LIBPIOD_A) $(LIBPIO_A)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(LIBPIOD_A) $(LIBPIO_A) $(LDLIBS) $(call pkg,--libs,cmocka)
