/* A network helper without a VM or libslirp, for the unit tests of its
 * frame path (guard, resolver, queue to the guest):
 *   - QEMU's end of the frame socket is a socketpair whose other end the
 *     test reads: what the guest would receive;
 *   - slirp_input is this file's, and records what the guard let through;
 *   - the policy: the gateway 10.0.2.2 with host port HF_HOST_PORT, the
 *     allow rules HF_ALLOWED_NET (a range always denied unless allowed:
 *     no address outside it passes) and *.test, the deny rule
 *     HF_DENIED_NET; no resolver (have_ares false) unless the test starts
 *     one. */
#ifndef SBX_TEST_HELPER_FIXTURE_H
#define SBX_TEST_HELPER_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "net/net_helper.h"

#define HF_HOST_PORT 8000
#define HF_ALLOWED_NET "203.0.113.0/24"
#define HF_DENIED_NET "198.51.100.0/24"
#define HF_ALLOWED 0xcb00710au /* 203.0.113.10 */
#define HF_DENIED 0xc6336407u  /* 198.51.100.7 */

/* A fresh helper (the last one's queue, policy and sockets freed); aborts
 * when the socketpair or the rule cannot be made. */
struct net_helper *hf_reset(void);
/* The guest's end of the frame socket (non-blocking). */
int hf_guest_fd(void);
/* Closes the guest's end: QEMU gone. */
void hf_close_guest(void);
/* The next frame the guest received into buf (cap bytes), parsed into f;
 * 0 when none is waiting. */
size_t hf_to_guest(uint8_t *buf, size_t cap, struct net_frame *f);
/* How many frames slirp_input has received since the last reset, and the
 * last one. */
unsigned hf_slirp_count(void);
const uint8_t *hf_slirp_last(size_t *len);

#endif
