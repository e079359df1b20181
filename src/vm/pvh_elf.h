/* Wraps libkrunfw's raw kernel image in an ELF64 file that QEMU's -kernel
 * boots through PVH: one PT_LOAD at the image's physical load address and
 * one PT_NOTE covering the kernel's own XEN_ELFNOTE_PHYS32_ENTRY note. */
#ifndef SBX_VM_PVH_ELF_H
#define SBX_VM_PVH_ELF_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define PVH_NOTE_TYPE 18 /* XEN_ELFNOTE_PHYS32_ENTRY */

struct pvh_note {
	size_t offset; /* of the note header within the image */
	size_t size;   /* header + padded name + padded descriptor */
	uint64_t entry;
};

/* Finds the PVH entry note ("Xen", type 18) in a raw image. */
int pvh_find_note(const uint8_t *image, size_t size, struct pvh_note *note, sbx_error_t *err);

/* Size of the headers that precede the image in the wrapper. */
#define PVH_ELF_HEADER_SPACE 4096u

/* Fills the first PVH_ELF_HEADER_SPACE bytes of the wrapper; the image
 * follows them unchanged. */
int pvh_elf_headers(uint8_t out[PVH_ELF_HEADER_SPACE], uint64_t load, uint64_t image_size,
		    const struct pvh_note *note, sbx_error_t *err);

/* Writes the whole wrapper (headers, then image) to fd. */
int pvh_elf_write(int fd, const uint8_t *image, size_t size, uint64_t load, sbx_error_t *err);

#endif
