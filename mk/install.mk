# mk/install.mk - what `make install` puts where, and `make uninstall`.
# SPDX-License-Identifier: BSD-3-Clause
#
#   make programs                 what install installs, built (no tests)
#   make install   [DESTDIR=...] [PREFIX=/usr/local] [LIBDIR=...] ...
#   make uninstall [the same]     removes what install put
#
# One list (INST_FILES: destination <- source) drives both, so uninstall
# removes exactly the files install writes. Configuration under
# $(SYSCONFDIR)/pio is written only where no file of that name is, and
# removed only while it is still the file install wrote (an edited one
# stays, and uninstall says so). Directories: uninstall removes the ones it
# emptied that are PIO's own ($(SYSCONFDIR)/pio); with DESTDIR (a staging
# tree) it removes every directory of the tree it emptied, so a DESTDIR
# install and uninstall leave nothing. It never removes a shared folder
# such as /usr/local/bin of a real system. Units and pkg-config files are
# written from templates at install time (@PREFIX@, @SBINDIR@, ...), so
# they name the paths of this install. The systemd and tmpfiles folders
# follow PREFIX (systemd reads /usr/local/lib/systemd/system too);
# SYSCONFDIR is /etc for PREFIX=/usr, else PREFIX/etc.
PREFIX      ?= /usr/local
DESTDIR     ?=
BINDIR      ?= $(PREFIX)/bin
SBINDIR     ?= $(PREFIX)/sbin
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
MANDIR      ?= $(PREFIX)/share/man
SYSCONFDIR  ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR     ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
# bash completions (tools/completion/NAME): where bash-completion looks for
# the packages of that PREFIX (/usr/share/bash-completion/completions for
# PREFIX=/usr; it reads /usr/local/share/... too)
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
COMPLETIONS := tools/completion/pcp tools/completion/pfs tools/completion/pio-info

SYSTEMD_UNITS := piod.service gas-dispatcher.service pfs-mds.service pfs-iod@.service \
                 $(if $(filter 1,$(WITH_VIZ)),pio-vizd.service)
# man pages of parts not built are not installed
MAN_INSTALL := $(filter-out $(if $(filter 0,$(WITH_VIZ)),%/pio-vizd.8) \
                 $(if $(filter 0,$(WITH_FORTRAN)),%/pio_fortran.3),$(MAN_ROFF))

PROGRAMS := $(LIBPIO_A) $(LIBPIO_SO) $(LIBPIO_SONAME) $(INSTALL_LIBS) $(INSTALL_SOS) $(INSTALL_VERSIONED_SOS) \
            $(INSTALL_INCLUDES) $(BINS) $(SBINS) $(MAN_INSTALL)
.PHONY: programs
programs: $(PROGRAMS)

# INST_FILES: DEST:SOURCE:MODE for every plain file; the shared libraries'
# links and the generated files are listed in INST_LINKS and INST_GEN.
inst_to = $(foreach f,$(2),$(1)/$(notdir $(f)):$(f):$(3))
INST_FILES := \
  $(call inst_to,$(LIBDIR),$(LIBPIO_A) $(INSTALL_LIBS),644) \
  $(call inst_to,$(LIBDIR),$(INSTALL_SOS),755) \
  $(call inst_to,$(INCLUDEDIR),libpio/pio.h $(INSTALL_INCLUDES),644) \
  $(call inst_to,$(BINDIR),$(BINS),755) \
  $(call inst_to,$(SBINDIR),$(SBINS),755) \
  $(call inst_to,$(BASHCOMPDIR),$(COMPLETIONS),644) \
  $(foreach m,$(MAN_INSTALL),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)):$(m):644) \
  $(TMPFILESDIR)/pio.conf:systemd/pio.tmpfiles:644
# versioned shared libraries: NAME.so.VERSION, NAME.so.SOVERSION -> it, NAME.so
INST_SONAMES := $(notdir $(LIBPIO_SO) $(INSTALL_VERSIONED_SOS))
INST_LINKS := $(foreach n,$(INST_SONAMES),$(LIBDIR)/$(n).$(PIO_SOVERSION) $(LIBDIR)/$(n))
# generated from templates: DEST:TEMPLATE
INST_GEN := $(foreach p,$(PC_FILES),$(LIBDIR)/pkgconfig/$(notdir $(p:.in=)):$(p)) \
            $(foreach u,$(SYSTEMD_UNITS),$(UNITDIR)/$(u):systemd/$(u).in)
# configuration: DEST:SOURCE, written only where absent
INST_CONF := $(SYSCONFDIR)/pio/piod.conf:piod/piod.conf.example \
             $(SYSCONFDIR)/pio/services.env:systemd/services.env

INST_SED := sed -e 's|@PREFIX@|$(PREFIX)|g; s|@LIBDIR@|$(LIBDIR)|g; s|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
  -e 's|@BINDIR@|$(BINDIR)|g; s|@SBINDIR@|$(SBINDIR)|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
  -e 's|@VERSION@|$(PIO_VERSION)|g; s|@REQUIRES@|$(PKG_DEPS)|g; s|@LIBS_PRIVATE@|$(LIBPIO_LIBS)|g'
inst_dest = $(word 1,$(subst :, ,$(1)))
inst_src  = $(word 2,$(subst :, ,$(1)))
inst_mode = $(word 3,$(subst :, ,$(1)))
INST_ALL  := $(foreach e,$(INST_FILES) $(INST_GEN) $(INST_CONF),$(call inst_dest,$(e))) \
             $(foreach n,$(INST_SONAMES),$(LIBDIR)/$(n).$(PIO_VERSION)) $(INST_LINKS)
INST_DIRS := $(sort $(dir $(INST_ALL)))

# The Python package (bindings/python), where python3 has cffi: built by pip
# against this build's libpio, with LIBDIR as its run path, into PYTHONDIR
# (Debian's folder for PREFIX; override it for another layout). PYTHON: the
# python3 it is for (the system's, /usr/bin/python3, where there is one: a
# python3 first on PATH may be a pyenv or conda one); it needs cffi,
# setuptools, pip and wheel, and builds without an index (no isolation).
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
WITH_PYTHON ?= $(shell $(PYTHON) -c 'import cffi, setuptools, pip, wheel' 2>/dev/null && echo 1 || echo 0)
PYTHONDIR ?= $(shell $(PYTHON) -c 'import sys; p = "$(PREFIX)"; \
  print(p + "/lib/python3/dist-packages" if p == "/usr" else \
        p + "/lib/python%d.%d/dist-packages" % sys.version_info[:2])')

.PHONY: install uninstall install-python uninstall-python
install: $(PROGRAMS) $(if $(filter 1,$(WITH_PYTHON)),install-python)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))install -d $(addprefix $(DESTDIR),$(INST_DIRS))
	$(Q)$(foreach e,$(INST_FILES),install -m $(call inst_mode,$(e)) $(call inst_src,$(e)) \
	  $(DESTDIR)$(call inst_dest,$(e)) &&) :
	$(Q)$(foreach s,$(LIBPIO_SO) $(INSTALL_VERSIONED_SOS),n=$(notdir $(s)); \
	  install -m 755 $(s) $(DESTDIR)$(LIBDIR)/$$n.$(PIO_VERSION) && \
	  ln -sfn $$n.$(PIO_VERSION) $(DESTDIR)$(LIBDIR)/$$n.$(PIO_SOVERSION) && \
	  ln -sfn $$n.$(PIO_SOVERSION) $(DESTDIR)$(LIBDIR)/$$n &&) :
	$(Q)$(foreach e,$(INST_GEN),$(INST_SED) $(call inst_src,$(e)) >$(DESTDIR)$(call inst_dest,$(e)) && \
	  chmod 644 $(DESTDIR)$(call inst_dest,$(e)) &&) :
	$(Q)$(foreach e,$(INST_CONF),d=$(DESTDIR)$(call inst_dest,$(e)); \
	  if [ -e "$$d" ]; then echo "  kept   $$d (present)"; \
	  else install -m 644 $(call inst_src,$(e)) "$$d" || exit 1; fi;) :

# pip builds in a copy (it writes build/ beside setup.py)
install-python: $(LIBPIO_SO) $(LIBPIO_SONAME)
	$(call msg,PIP,$(DESTDIR)$(PYTHONDIR)/pio)rm -rf $(B)/python-pkg && \
	  cp -r bindings/python $(B)/python-pkg && \
	  PIO_INCLUDE_DIR=$(CURDIR)/libpio PIO_LIB_DIR=$(CURDIR)/$(B)/lib PIO_RPATH=$(LIBDIR) \
	  $(PYTHON) -m pip install -q --no-deps --no-index --no-build-isolation --no-compile \
	    --upgrade --target $(DESTDIR)$(PYTHONDIR) $(B)/python-pkg

uninstall-python:
	$(Q)rm -rf $(DESTDIR)$(PYTHONDIR)/pio $(DESTDIR)$(PYTHONDIR)/pio-*.dist-info

uninstall: $(if $(filter 1,$(WITH_PYTHON)),uninstall-python)
	$(call msg,RM,$(DESTDIR)$(PREFIX))rm -f $(addprefix $(DESTDIR),$(filter-out \
	  $(foreach e,$(INST_CONF),$(call inst_dest,$(e))),$(INST_ALL)))
	$(Q)$(foreach e,$(INST_CONF),d=$(DESTDIR)$(call inst_dest,$(e)); \
	  if [ -e "$$d" ] && ! cmp -s "$$d" $(call inst_src,$(e)); then \
	    echo "  kept   $$d (changed since install)"; else rm -f "$$d"; fi;) :
	$(Q)for d in $(if $(DESTDIR),$(call inst_up,$(INST_DIRS) $(if $(filter 1,$(WITH_PYTHON)),$(PYTHONDIR)/)),$(SYSCONFDIR)/pio/); do \
	  [ -d "$(DESTDIR)$$d" ] && rmdir --ignore-fail-on-non-empty "$(DESTDIR)$$d"; done; :

# inst_up DIRS: DIRS and their parents up to /, deepest first (with DESTDIR
# in front they are the staging tree's folders)
inst_parents = $(if $(filter-out / .,$(1)),$(1) $(call inst_parents,$(dir $(patsubst %/,%,$(1)))))
inst_up = $(shell printf '%s\n' $(sort $(foreach d,$(1),$(call inst_parents,$(d)))) | \
  awk '{ print length($$0) " " $$0 }' | sort -rn | cut -d' ' -f2-)
