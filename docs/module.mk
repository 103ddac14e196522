# docs/module.mk - man pages: Markdown is the source, roff is generated.
MAN_MD   := $(wildcard docs/man/*.md)
MAN_ROFF := $(MAN_MD:docs/man/%.md=$(B)/man/%)

$(B)/man/%: docs/man/%.md
	@mkdir -p $(@D)
	$(call msg,MAN,$@)go-md2man -in $< -out $@
