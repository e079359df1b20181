#include "vm/pvh_elf.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

int pvh_find_note(const uint8_t *image, size_t size, struct pvh_note *note, sbx_error_t *err)
{
	/* Notes are 4-byte aligned: namesz=4, descsz=4|8, type=18, "Xen\0". */
	static const uint8_t name[4] = { 'X', 'e', 'n', '\0' };
	for (size_t off = 0; size >= 16 && off <= size - 16; off += 4) {
		const uint8_t *p = image + off;
		if (le32(p) != 4 || le32(p + 8) != PVH_NOTE_TYPE || memcmp(p + 12, name, 4) != 0)
			continue;
		uint32_t descsz = le32(p + 4);
		if (descsz != 4 && descsz != 8)
			continue;
		if (size - off - 16 < pad4(descsz))
			continue;
		uint64_t entry = le32(p + 16);
		if (descsz == 8)
			entry |= (uint64_t)le32(p + 20) << 32;
		if (entry == 0)
			continue;
		note->offset = off;
		note->size = 16 + pad4(descsz);
		note->entry = entry;
		return 0;
	}
	return sbx_error_set(err, 0, "no PVH entry note (Xen, type 18) in the kernel image");
}

int pvh_elf_headers(uint8_t out[PVH_ELF_HEADER_SPACE], uint64_t load, uint64_t image_size,
		    const struct pvh_note *note, sbx_error_t *err)
{
	if (note->offset + note->size > image_size || load == 0)
		return sbx_error_set(err, EINVAL, "PVH note outside the kernel image");
	memset(out, 0, PVH_ELF_HEADER_SPACE);
	Elf64_Ehdr eh = {
		.e_type = ET_EXEC,
		.e_machine = EM_X86_64,
		.e_version = EV_CURRENT,
		.e_entry = note->entry,
		.e_phoff = sizeof(Elf64_Ehdr),
		.e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr),
		.e_phnum = 2,
	};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
	Elf64_Phdr ph[2] = {
		{
			.p_type = PT_LOAD,
			.p_flags = PF_R | PF_W | PF_X,
			.p_offset = PVH_ELF_HEADER_SPACE,
			.p_vaddr = load,
			.p_paddr = load,
			.p_filesz = image_size,
			.p_memsz = image_size,
			.p_align = PVH_ELF_HEADER_SPACE,
		},
		{
			.p_type = PT_NOTE,
			.p_flags = PF_R,
			.p_offset = PVH_ELF_HEADER_SPACE + note->offset,
			.p_vaddr = load + note->offset,
			.p_paddr = load + note->offset,
			.p_filesz = note->size,
			.p_memsz = note->size,
			.p_align = 4,
		},
	};
	memcpy(out, &eh, sizeof(eh));
	memcpy(out + sizeof(eh), ph, sizeof(ph));
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n, sbx_error_t *err)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return sbx_error_errno(err, w < 0 ? errno : EIO, "write kernel wrapper");
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int pvh_elf_write(int fd, const uint8_t *image, size_t size, uint64_t load, sbx_error_t *err)
{
	struct pvh_note note;
	uint8_t hdr[PVH_ELF_HEADER_SPACE];
	if (pvh_find_note(image, size, &note, err) < 0 || pvh_elf_headers(hdr, load, size, &note, err) < 0)
		return -1;
	if (write_all(fd, hdr, sizeof(hdr), err) < 0 || write_all(fd, image, size, err) < 0)
		return -1;
	return 0;
}
