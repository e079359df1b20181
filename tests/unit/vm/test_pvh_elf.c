#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vm/pvh_elf.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* A note at `off`: namesz, descsz, type, name, desc. */
static void put_note(uint8_t *img, size_t off, uint32_t type, const char *name, uint32_t descsz, uint64_t entry)
{
	put32(img + off, 4);
	put32(img + off + 4, descsz);
	put32(img + off + 8, type);
	memcpy(img + off + 12, name, 4);
	put32(img + off + 16, (uint32_t)entry);
	if (descsz == 8)
		put32(img + off + 20, (uint32_t)(entry >> 32));
}

TEST(finds_the_pvh_note)
{
	uint8_t *img = calloc(1, 8192);
	CHECK(img != NULL);
	put_note(img, 100, 17, "Xen", 8, 0x2000);      /* another Xen note */
	put_note(img, 200, PVH_NOTE_TYPE, "Lnx", 8, 0x3000); /* wrong owner */
	put_note(img, 4000, PVH_NOTE_TYPE, "Xen", 8, 0x1000abc);
	struct pvh_note n;
	sbx_error_t err = NULL;
	int rc = pvh_find_note(img, 8192, &n, &err);
	free(img);
	CHECK_INT(rc, 0);
	CHECK_INT(n.offset, 4000);
	CHECK_INT(n.size, 24);
	CHECK_INT(n.entry, 0x1000abc);
}

TEST(four_byte_descriptor)
{
	uint8_t img[64] = { 0 };
	put_note(img, 8, PVH_NOTE_TYPE, "Xen", 4, 0x1234);
	struct pvh_note n;
	sbx_error_t err = NULL;
	CHECK_INT(pvh_find_note(img, sizeof(img), &n, &err), 0);
	CHECK_INT(n.size, 20);
	CHECK_INT(n.entry, 0x1234);
}

TEST(missing_or_truncated_note_fails)
{
	uint8_t img[64] = { 0 };
	struct pvh_note n;
	sbx_error_t err = NULL;
	CHECK(pvh_find_note(img, sizeof(img), &n, &err) < 0);
	sbx_error_free(&err);
	/* The descriptor would run past the end. */
	put_note(img, 44, PVH_NOTE_TYPE, "Xen", 4, 0);
	put32(img + 48, 8);
	CHECK(pvh_find_note(img, 64, &n, &err) < 0);
	sbx_error_free(&err);
	CHECK(pvh_find_note(img, 10, &n, &err) < 0);
	sbx_error_free(&err);
}

TEST(wrapper_headers)
{
	struct pvh_note n = { .offset = 0x200, .size = 24, .entry = 0x1000200 };
	static uint8_t hdr[PVH_ELF_HEADER_SPACE];
	sbx_error_t err = NULL;
	CHECK_INT(pvh_elf_headers(hdr, 0x1000000, 0x10000, &n, &err), 0);
	Elf64_Ehdr eh;
	memcpy(&eh, hdr, sizeof(eh));
	CHECK(memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0);
	CHECK_INT(eh.e_ident[EI_CLASS], ELFCLASS64);
	CHECK_INT(eh.e_machine, EM_X86_64);
	CHECK_INT(eh.e_type, ET_EXEC);
	CHECK_INT(eh.e_phnum, 2);
	Elf64_Phdr ph[2];
	memcpy(ph, hdr + eh.e_phoff, sizeof(ph));
	CHECK_INT(ph[0].p_type, PT_LOAD);
	CHECK_INT(ph[0].p_paddr, 0x1000000);
	CHECK_INT(ph[0].p_offset, PVH_ELF_HEADER_SPACE);
	CHECK_INT(ph[0].p_filesz, 0x10000);
	CHECK_INT(ph[1].p_type, PT_NOTE);
	CHECK_INT(ph[1].p_offset, PVH_ELF_HEADER_SPACE + 0x200);
	CHECK_INT(ph[1].p_filesz, 24);
	/* A note outside the image is refused. */
	n.offset = 0x10000 - 8;
	CHECK(pvh_elf_headers(hdr, 0x1000000, 0x10000, &n, &err) < 0);
	sbx_error_free(&err);
}
