# bindings/fortran/module.mk - the Fortran binding: module pio (pio.mod) and libpiof.a,
# and the Fortran test programs under tests/prog/.
#
# pio_f_gen (a C program that includes pio.h) writes pio_constants.inc, which
# pio.f90 includes: the Fortran constants come from pio.h's X-lists and from
# every object-like numeric PIO_ macro (listed by the preprocessor into
# pio_macros.h), never from a copy. libpiof.a holds the module's object and the small C half (pio_f.c);
# it is static only, so a C program that links `-lpiof -lpio` from pio.pc
# takes nothing from it and never needs libgfortran. Fortran programs are
# compiled with -std=f2018 (TYPE(*), DIMENSION(..) and ISO_Fortran_binding
# are Fortran 2018 / TS 29113) and linked by gfortran (or mpif90).
FORT_DIR  := $(B)/bindings/fortran
FFLAGS    := -std=f2018 -Wall -Wextra $(WERR) -fimplicit-none $(OPT) -g -fPIC $(SANFLAGS) \
             $(EXTRA_FFLAGS)
PIO_MOD   := $(FORT_DIR)/pio.mod
PIO_MOD_O := $(FORT_DIR)/pio.o
LIBPIOF_A := $(B)/lib/libpiof.a
PIOF_GEN  := $(FORT_DIR)/pio_f_gen
PIOF_INC  := $(FORT_DIR)/pio_constants.inc
PIOF_MACROS := $(FORT_DIR)/pio_macros.h
MPIFC     ?= mpif90

OBJS += $(FORT_DIR)/pio_f.o $(FORT_DIR)/pio_f_gen.o

# ISO_Fortran_binding.h lives in gfortran's include folder (gcc finds it
# there on its own; another C compiler needs the path).
$(FORT_DIR)/pio_f.o $(FORT_DIR)/pio_f_gen.o: CPPFLAGS += -I$(shell $(FC) -print-file-name=include)

# GEN_MACRO_(NAME) for each '#define PIO_NAME value' (not function-like, not empty)
$(PIOF_MACROS): libpio/pio.h $(SETTINGS)
	@mkdir -p $(@D)
	$(call msg,GEN,$@)set -o pipefail; $(CC) -D_GNU_SOURCE -dM -E -x c libpio/pio.h | \
	  sed -nE 's/^#define (PIO_[A-Z0-9_]+) (.+)$$/GEN_MACRO_(\1)/p' | LC_ALL=C sort >$@.tmp && mv $@.tmp $@

$(FORT_DIR)/pio_f_gen.o: $(PIOF_MACROS)
$(FORT_DIR)/pio_f_gen.o: CPPFLAGS += -I$(FORT_DIR)

$(PIOF_GEN): $(FORT_DIR)/pio_f_gen.o
	$(call msg,LD,$@)$(CC) $(LDFLAGS) -o $@ $<

$(PIOF_INC): $(PIOF_GEN)
	$(call msg,GEN,$@)$< >$@.tmp && mv $@.tmp $@

# gfortran rewrites pio.mod only when the interface changes; users depend
# on pio.o, which is always rebuilt with it.
$(PIO_MOD_O): bindings/fortran/pio.f90 $(PIOF_INC) $(SETTINGS)
	@mkdir -p $(@D)
	$(call msg,FC,$<)$(FC) $(FFLAGS) -I$(FORT_DIR) -J$(FORT_DIR) -c -o $@ $<
$(PIO_MOD): $(PIO_MOD_O)

$(LIBPIOF_A): $(PIO_MOD_O) $(FORT_DIR)/pio_f.o
	@mkdir -p $(@D)
	$(call msg,AR,$@)rm -f $@ && ar rcs $@ $^

# Installed beside libpio.a and pio.h (the Makefile's install target).
INSTALL_LIBS     += $(LIBPIOF_A)
INSTALL_INCLUDES += $(PIO_MOD)
PC_FILES         += bindings/fortran/pio-fortran.pc.in

# Fortran helper programs of the tests: tests/prog/NAME.f90 -> $(B)/tests/prog/NAME.
# They compare received REALs with == on purpose (values must be exact):
# -Wno-compare-reals (FFLAGS_EXACT, also for examples/fortran). And gfortran
# 12 at -O2 warns (-Wmaybe-uninitialized) about the descriptors of
# allocatable arrays it reallocates on assignment: off there too.
FFLAGS_EXACT   := -Wno-compare-reals -Wno-maybe-uninitialized
FORT_PROG_SRCS := $(wildcard tests/prog/*.f90)
FORT_PROGS     := $(FORT_PROG_SRCS:%.f90=$(B)/%)
TEST_BINS      += $(LIBPIOF_A) $(FORT_PROGS)

$(FORT_PROGS:%=%.o): $(B)/%.o: %.f90 $(PIO_MOD_O) $(SETTINGS)
	@mkdir -p $(@D)
	$(call msg,FC,$<)$(FC) $(FFLAGS) $(FFLAGS_EXACT) -I$(FORT_DIR) -J$(@D) -c -o $@ $<

$(FORT_PROGS): %: %.o $(LIBPIOF_A) $(LIBPIO_A)
	$(call msg,LD,$@)$(FC) $(LDFLAGS) -o $@ $< $(LIBPIOF_A) $(LIBPIO_A) $(LDLIBS)
