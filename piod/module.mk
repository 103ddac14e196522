# piod/module.mk - the daemon. Everything but main.c also goes into an
# internal archive (libpiod.a) that the unit tests link.
PIOD_SRCS := $(filter-out piod/main.c,$(wildcard piod/*.c))
PIOD_OBJS := $(PIOD_SRCS:%.c=$(B)/%.o)
LIBPIOD_A := $(B)/lib/libpiod.a
PIOD_BIN  := $(B)/sbin/piod
SBINS += $(PIOD_BIN)
OBJS  += $(PIOD_OBJS) $(B)/piod/main.o

$(LIBPIOD_A): $(PIOD_OBJS)
	@mkdir -p $(@D)
	$(call msg,AR,$@)rm -f $@ && ar rcs $@ $^

$(PIOD_BIN): $(B)/piod/main.o $(LIBPIOD_A) $(LIBPIO_A)
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
