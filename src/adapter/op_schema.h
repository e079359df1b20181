/* The pieces the functions' JSON Schemas are written with (ops.c for the
 * 23, ops_ext.c for the extensions): string literals pasted together at
 * compile time, so a schema costs nothing at run time. */
#ifndef SBX_ADAPTER_OP_SCHEMA_H
#define SBX_ADAPTER_OP_SCHEMA_H

#define Q(s) "\"" s "\""
#define OBJ(props, req) "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req "]}"
#define F(name, schema) Q(name) ":" schema
#define T_STR "{\"type\":\"string\"}"
#define T_BOOL "{\"type\":\"boolean\"}"
#define T_U32 "{\"type\":\"integer\",\"minimum\":0,\"maximum\":4294967295}"
#define T_U64 "{\"type\":\"integer\",\"minimum\":0}"
#define T_I64 "{\"type\":\"integer\"}"
#define T_STRS "{\"type\":\"array\",\"items\":" T_STR "}"
#define T_NETWORK "{\"oneOf\":[" T_BOOL ",{\"type\":\"object\",\"properties\":{\"allow\":" T_STRS ",\"deny\":" T_STRS "},\"additionalProperties\":false}]}"
#define T_ENV "{\"oneOf\":[" T_STRS ",{\"type\":\"object\",\"additionalProperties\":" T_STR "}]}"
#define T_CHANNEL                                                                                            \
	OBJ(F("channel_id", T_STR) "," F("access_key", T_STR) "," F("direction", "{\"type\":\"string\",\"enum\":[" \
										 "\"read\",\"write\"]}"),               \
	    Q("channel_id") "," Q("access_key") "," Q("direction"))
#define T_ENTRY                                                                                             \
	OBJ(F("name", T_STR) "," F("is_dir", T_BOOL) "," F("size", T_U64) "," F("mode", T_STR) "," F("mtime", T_I64) \
		"," F("is_symlink", T_BOOL),                                                                       \
	    Q("name") "," Q("is_dir") "," Q("size") "," Q("mode") "," Q("mtime") "," Q("is_symlink"))
#define ID F("sandbox_id", T_STR)
#define EXEC_RESULT_PROPS                                                                                     \
	F("stdout", T_STR) "," F("stderr", T_STR) "," F("exit_code", "{\"type\":[\"integer\",\"null\"]}") "," \
		F("timed_out", T_BOOL) "," F("duration_ms", T_U64) "," F("success", T_BOOL) ","                 \
		F("stdout_truncated", T_BOOL) "," F("stderr_truncated", T_BOOL)
#define EXEC_RESULT_REQ                                                                                       \
	Q("stdout") "," Q("stderr") "," Q("exit_code") "," Q("timed_out") "," Q("duration_ms") "," Q("success") \
		"," Q("stdout_truncated") "," Q("stderr_truncated")
#define WALK                                                                                             \
	F("recursive", T_BOOL) "," F("ignore_case", T_BOOL) "," F("include_glob", T_STRS) "," F("exclude_glob", \
												       T_STRS)
#define AUTH F("auth", T_STR) "," F("worker", T_STR)
#define EMPTY OBJ("", "")

#endif
