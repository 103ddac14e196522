# tools/module.mk - command-line tools linked with libpio: tools/NAME/*.c -> bin/NAME.
# Every .c of a tool's folder is linked in: pio-perf's perf_sizes.c and
# perf_loop.c (its size syntax and measuring loop) also go into
# bench/tcp_pingpong (bench/module.mk).
TOOLS := pio-info pio-perf

# Each tool writes --json through common/cli_json.c (json-c); that object
# is built here for every command that links it (pfs, gas-stat, pio-vizd).
OBJS += $(CLI_JSON_OBJ)

define tool_rule
$(1)_OBJS := $$(patsubst %.c,$$(B)/%.o,$$(wildcard tools/$(1)/*.c))
OBJS += $$($(1)_OBJS)
BINS += $$(B)/bin/$(1)
$$(B)/bin/$(1): $$($(1)_OBJS) $$(CLI_JSON_OBJ) $$(LIBPIO_A)
	@mkdir -p $$(@D)
	$$(call msg,LD,$$@)$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS) $$(JSONC_LIBS)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))
BINS += tools/pio-job/pio-job
