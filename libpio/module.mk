# libpio/module.mk - the client library (static and shared).
PIO_VERSION   := 0.1.0
PIO_SOVERSION := 0

LIBPIO_SRCS := libpio/pio.c libpio/reader.c libpio/sendrecv.c libpio/memtrim.c libpio/win.c libpio/winctl.c libpio/capture.c libpio/fstream.c libpio/info.c libpio/file.c libpio/wire/pcp_proto.c \
               libpio/feed.c libpio/wire/viz_proto.c libpio/error.c libpio/types.c libpio/parse.c libpio/wire/wire.c libpio/pool.c \
               libpio/transport/registry.c libpio/transport/addr.c libpio/transport/tcp/tcp.c \
               libpio/transport/rdma/ucx.c libpio/transport/rdma/rma.c \
               libpio/transport/rdma/stream.c
LIBPIO_OBJS := $(LIBPIO_SRCS:%.c=$(B)/%.o)
LIBPIO_A    := $(B)/lib/libpio.a
LIBPIO_SO   := $(B)/lib/libpio.so
OBJS += $(LIBPIO_OBJS)

$(LIBPIO_A): $(LIBPIO_OBJS)
	@mkdir -p $(@D)
	$(call msg,AR,$@)rm -f $@ && ar rcs $@ $^

# Only the API of pio.h leaves libpio.so: its objects are built with hidden
# visibility (pio.h declares its functions default) and the export list
# names PIO_* alone (tests/bats/build.bats checks it with nm -D).
$(LIBPIO_OBJS): CFLAGS += -fvisibility=hidden
$(LIBPIO_SO): $(LIBPIO_OBJS) libpio/libpio.map
	@mkdir -p $(@D)
	$(call msg,LD,$@)$(CC) -shared -Wl,-soname,libpio.so.$(PIO_SOVERSION) \
	  -Wl,--version-script=libpio/libpio.map $(LDFLAGS) -o $@ $(LIBPIO_OBJS) $(LDLIBS)
