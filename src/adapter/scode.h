/* The contract's S-codes (contract.md §2, §3) and the error bodies the
 * adapter sends back to the engine.
 *
 * A handler fails with an sbx_error whose `scode` names the S-code and whose
 * message is the *detail*: codes with a message template ("invalid request:
 * ", "sandbox not found: ", ...) get their prefix added here, the others
 * (S003, S100, S101, S102, S200, S219, S501-S505) carry the whole message.
 * The pseudo-code SBX_SCODE_DECODE marks a request that does not fit the
 * function's schema (§2.5); its message is the serde-style text. */
#ifndef SBX_ADAPTER_SCODE_H
#define SBX_ADAPTER_SCODE_H

#include <jansson.h>
#include <stdbool.h>

#include "common/error.h"

#define SBX_SCODE_DECODE "decode"
#define SBX_DOCS_BASE "https://github.com/iii-hq/iii/blob/main/crates/iii-worker/src/sandbox_daemon/README.md"

struct sbx_scode {
	const char *code;
	const char *type;
	bool retryable;
	const char *prefix;   /* prepended to the detail; "" for none */
	const char *fix_note; /* NULL serialises as null */
};

/* The table entry for `code`, or NULL for a code the contract lacks. */
const struct sbx_scode *sbx_scode_find(const char *code);

/* {type, code, message, docs_url, retryable, fix, fix_note} for a failure
 * with S-code `code` and detail `detail`.  An unknown code is reported as
 * S300 (a failure nobody classified is a platform failure). */
json_t *sbx_envelope_new(const char *code, const char *detail);

/* Rewrites an envelope for a failure inside `run` (§2.4): keeps the inner
 * code, type, retryable and docs_url; prefixes the message with the step
 * and sandbox id; sets fix to the context object and fix_note to null. */
int sbx_envelope_wrap_run(json_t *envelope, const char *step, const char *sandbox_id, sbx_error_t *err);

/* {code:"invocation_failed", message:"handler error: <compact envelope>"}.
 * Takes ownership of `envelope`. */
json_t *sbx_error_body_from_envelope(json_t *envelope);
/* {code:"invocation_failed", message:"serialization error: <text>"}. */
json_t *sbx_error_body_decode(const char *text);

/* The error body for a failed handler: a decode error, or the envelope of
 * the error's S-code (S300 when it has none).  `run_step` (may be NULL)
 * applies the run wrapping with `sandbox_id` ("" before create).  `extra`
 * (may be NULL; borrowed) adds its members after the envelope's own, never
 * replacing one: a timed-out exec's output (sandbox/sandbox.h). */
json_t *sbx_error_body_from_error(sbx_error_t e, const char *run_step, const char *sandbox_id, json_t *extra);

/* Helpers for the handlers: turn *err into the error body in *out, free it
 * and return -1. */
int sbx_op_fail(sbx_error_t *err, json_t **out);
int sbx_op_fail_run(sbx_error_t *err, const char *step, const char *sandbox_id, json_t **out);
/* sbx_op_fail_run with `extra` (may be NULL; borrowed) added to the
 * envelope as sbx_error_body_from_error adds it. */
int sbx_op_fail_extra(sbx_error_t *err, const char *step, const char *sandbox_id, json_t *extra, json_t **out);
/* Names the function running on this thread (sbx_adapter_call sets it
 * around each call) in the error of a failure that gave no cause; returns
 * the name it replaces. */
const char *sbx_op_set_current(const char *op);

#endif
