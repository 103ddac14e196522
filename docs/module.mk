# docs/module.mk - man pages: Markdown is the source, roff is generated.
MAN_MD   := $(wildcard docs/man/*.md)
MAN_ROFF := $(MAN_MD:docs/man/%.md=$(B)/man/%)

$(B)/man/%: docs/man/%.md
	@mkdir -p $(@D)
	$(call msg,MAN,$@)go-md2man -in $< -out $@

# `man F` for every public function F of the installed headers: a function
# without a page of its own gets an alias page, the one line ".so manS/PAGE.S"
# (man(1) shows PAGE, the page whose NAME or SYNOPSIS lists F). The list is
# made from the headers and the pages by tools/man-aliases into a make
# fragment (make rereads it when it changed); a function no page documents
# stops the build there.
MAN_HEADERS := libpio/pio.h $(filter %.h,$(INSTALL_INCLUDES))
MAN_ALIASES_MK := $(B)/man/aliases.mk
MAN_ALIASES :=
$(MAN_ALIASES_MK): tools/man-aliases $(MAN_HEADERS) $(MAN_MD)
	@mkdir -p $(@D)
	$(call msg,GEN,$@)python3 tools/man-aliases '$$(B)/man' $(MAN_HEADERS) -- $(MAN_MD) \
	  >$@.tmp && mv $@.tmp $@
include $(MAN_ALIASES_MK)

$(MAN_ALIASES): $(B)/man/%: $(MAN_ALIASES_MK)
	$(call msg,MAN,$@)printf '.so %s\n' '$(MAN_SO)' >$@

MAN_ROFF += $(MAN_ALIASES)
