/* SHA-256 of a file's bytes, remembered per machine: <state>/hashes/ holds
 * one small entry per path (its identity: device, inode, size, change
 * times, and the hash), so each version of a file is read once, not once
 * per process.  Entries are checked before use and written atomically;
 * the directory is emptied when it holds FILE_HASH_MAX entries (a miss
 * only costs a read of the file). */
#ifndef SBX_VM_FILE_HASH_H
#define SBX_VM_FILE_HASH_H

#include <stddef.h>

#include "common/error.h"

#define FILE_HASH_HEX 64
#define FILE_HASH_MAX 256

/* The file's SHA-256 as 64 lowercase hex digits. */
int file_hash(const char *path, char hex[FILE_HASH_HEX + 1], sbx_error_t *err);
/* The SHA-256 of len bytes, the same way; -1 when OpenSSL fails. */
int file_hash_bytes(const void *buf, size_t len, char hex[FILE_HASH_HEX + 1]);

#endif
