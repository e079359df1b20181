/* The pure parts of the sandbox lifecycle: run's lang table, output
 * capping and lossy UTF-8, timeout clamping, boot env layering over an
 * image's OCI config, the reaper's decision and the memory budget. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter/exec_output.h"
#include "adapter/fs/fs_errors.h"
#include "adapter/mem_budget.h"
#include "adapter/reaper_policy.h"
#include "adapter/sandbox/lang.h"
#include "adapter/sandbox/sandbox_ports.h"
#include "common/scodes.h"
#include "harness.h"
#include "image/image_runtime.h"
#include "proto/proto.h"

TEST(lang_table)
{
	const char *js[] = { "node", "js", "javascript" };
	for (int i = 0; i < 3; i++) {
		CHECK_STR(run_lang_lookup(js[i]).program, "node");
		CHECK_STR(run_lang_lookup(js[i]).file, "/tmp/run.js");
	}
	CHECK_STR(run_lang_lookup("py").program, "python3");
	CHECK_STR(run_lang_lookup("python").file, "/tmp/run.py");
	CHECK_STR(run_lang_lookup("bash").program, "/bin/sh");
	CHECK_STR(run_lang_lookup("shell").file, "/tmp/run.sh");
	CHECK_STR(run_lang_lookup("ruby").program, "ruby");
	CHECK_STR(run_lang_lookup("ruby").file, "/tmp/run.txt");
	CHECK_STR(run_lang_lookup("Python").program, "Python"); /* case matters */
}

/* A warm pool's VM of image "python" or "node" starts the program `run`
 * starts for that lang, with what keeps it from writing. */
TEST(lang_warm_up)
{
	const char *langs[] = { "node", "js", "python", "py", "sh" };
	for (int i = 0; i < 5; i++) {
		struct run_lang l = run_lang_lookup(langs[i]);
		CHECK(l.warm_up != NULL);
		CHECK_STR(l.warm_up[0], l.program);
	}
	char *const *py = run_lang_lookup("python").warm_up;
	CHECK_STR(py[1], "-I");
	CHECK_STR(py[2], "-B");
	CHECK(run_lang_lookup("ruby").warm_up == NULL);
	CHECK(run_lang_lookup("Python").warm_up == NULL);
}

TEST(output_is_capped_and_counted_as_truncated)
{
	struct exec_output o;
	sbx_error_t err = NULL;
	exec_output_init(&o, 10);
	CHECK_INT(exec_output_append(&o, "12345678", 8, &err), 0);
	CHECK(!o.truncated);
	CHECK_INT(exec_output_append(&o, "90", 2, &err), 0);
	CHECK(!o.truncated); /* exactly at the cap is not truncation */
	CHECK_INT(exec_output_append(&o, "x", 1, &err), 0);
	CHECK(o.truncated);
	CHECK_INT(o.len, 10);
	CHECK(memcmp(o.data, "1234567890", 10) == 0);
	exec_output_free(&o);
	exec_output_init(&o, EXEC_OUTPUT_CAP);
	char *big = malloc(700 * 1024);
	CHECK(big != NULL);
	memset(big, 'a', 700 * 1024);
	exec_output_append(&o, big, 700 * 1024, &err);
	exec_output_append(&o, big, 700 * 1024, &err);
	free(big);
	CHECK_INT(o.len, 1048576);
	CHECK(o.truncated);
	exec_output_free(&o);
}

static int lossy_is(const char *in, size_t n, const char *want)
{
	sbx_error_t err = NULL;
	size_t len = 0;
	char *s = utf8_lossy((const uint8_t *)in, n, &len, &err);
	int ok = s != NULL && len == strlen(want) && memcmp(s, want, len) == 0;
	free(s);
	return ok;
}

TEST(lossy_utf8_keeps_nul_bytes)
{
	sbx_error_t err = NULL;
	size_t len = 0;
	char *s = utf8_lossy((const uint8_t *)"a\0b\xff", 4, &len, &err);
	CHECK(s != NULL);
	CHECK_INT(len, 6);
	CHECK(memcmp(s, "a\0b\xef\xbf\xbd", 6) == 0);
	free(s);
}

#define FFFD "\xef\xbf\xbd"

TEST(lossy_utf8_replaces_invalid_sequences)
{
	CHECK(lossy_is("hi\n", 3, "hi\n"));
	CHECK(lossy_is("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
	CHECK(lossy_is("a\xffz", 3, "a" FFFD "z"));
	CHECK(lossy_is("\xc0\xaf", 2, FFFD FFFD));        /* overlong */
	CHECK(lossy_is("\xed\xa0\x80", 3, FFFD FFFD FFFD)); /* surrogate */
	CHECK(lossy_is("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD)); /* > U+10FFFF */
	CHECK(lossy_is("\xe2\x82", 2, FFFD));             /* truncated: one U+FFFD */
	CHECK(lossy_is("\xe2\x82x", 3, FFFD "x"));
	CHECK(lossy_is("", 0, ""));
}

TEST(timeout_is_clamped)
{
	CHECK_INT(exec_effective_timeout_ms(300000, 300000), 300000);
	CHECK_INT(exec_effective_timeout_ms(100, 300000), 100);
	CHECK_INT(exec_effective_timeout_ms(300000, 50), 50);
	CHECK_INT(exec_effective_timeout_ms(0, 50), 0);
	CHECK_INT(exec_effective_timeout_ms(10, 0), 1); /* max(ceiling, 1) */
}

static const char *find(char **env, const char *name)
{
	size_t k = strlen(name);
	for (size_t i = 0; env[i] != NULL; i++)
		if (strncmp(env[i], name, k) == 0 && env[i][k] == '=')
			return env[i] + k + 1;
	return NULL;
}

TEST(image_config_env_and_workdir)
{
	const char *cfg = "{\"config\":{\"Env\":[\"PATH=/opt/bin:/usr/bin\",\"LANG=C.UTF-8\",\"junk\"],"
			  "\"WorkingDir\":\"/app\",\"User\":\"1000\"}}";
	struct image_runtime rt;
	sbx_error_t err = NULL;
	CHECK_INT(image_runtime_parse(cfg, strlen(cfg), &rt, &err), 0);
	CHECK_STR(rt.workdir, "/app");
	CHECK_STR(rt.user, "1000");
	CHECK_STR(find(rt.env, "PATH"), "/opt/bin:/usr/bin");
	CHECK(rt.env[2] == NULL); /* "junk" has no '=' */
	json_t *over = json_pack("[s, s, s]", "LANG=en_US.UTF-8", "A=1", "noeq");
	char **env = boot_env_layer(rt.env, over, &err);
	json_decref(over);
	CHECK(env != NULL);
	CHECK_STR(find(env, "PATH"), "/opt/bin:/usr/bin"); /* the image's PATH is kept */
	CHECK_STR(find(env, "LANG"), "en_US.UTF-8");       /* create env wins */
	CHECK_STR(find(env, "A"), "1");
	CHECK(find(env, "noeq") == NULL);
	boot_env_free(env);
	image_runtime_free(&rt);
}

TEST(boot_env_default_path_and_bad_configs)
{
	sbx_error_t err = NULL;
	json_t *over = json_pack("[s]", "X=y");
	char **env = boot_env_layer(NULL, over, &err);
	json_decref(over);
	CHECK(env != NULL);
	CHECK_STR(find(env, "PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	boot_env_free(env);
	struct image_runtime rt;
	CHECK_INT(image_runtime_parse("{}", 2, &rt, &err), 0);
	CHECK(rt.env != NULL && rt.env[0] == NULL && rt.workdir == NULL && rt.user == NULL);
	image_runtime_free(&rt);
	/* An empty or null User is root, left to the guest's default. */
	const char *root[] = { "{\"config\":{\"User\":\"\"}}", "{\"config\":{\"User\":null}}" };
	for (int i = 0; i < 2; i++) {
		CHECK_INT(image_runtime_parse(root[i], strlen(root[i]), &rt, &err), 0);
		CHECK(rt.user == NULL);
		image_runtime_free(&rt);
	}
	const char *named = "{\"config\":{\"User\":\"www-data:www-data\",\"WorkingDir\":\"/srv\"}}";
	CHECK_INT(image_runtime_parse(named, strlen(named), &rt, &err), 0);
	CHECK_STR(rt.user, "www-data:www-data");
	image_runtime_free(&rt);
	/* A User the wire cannot carry fails here, not at boot. */
	char huge[400];
	int n = snprintf(huge, sizeof(huge), "{\"config\":{\"WorkingDir\":\"/w\",\"User\":\"%0300d\"}}", 0);
	CHECK(n > 0 && (size_t)n < sizeof(huge));
	CHECK_INT(image_runtime_parse(huge, (size_t)n, &rt, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "User") != NULL);
	sbx_error_free(&err);
	const char *nul = "{\"config\":{\"User\":\"root\\u0000x\"}}";
	CHECK_INT(image_runtime_parse(nul, strlen(nul), &rt, &err), -1);
	sbx_error_free(&err);
	/* relative WorkingDir is ignored */
	const char *rel = "{\"config\":{\"WorkingDir\":\"app\"}}";
	CHECK_INT(image_runtime_parse(rel, strlen(rel), &rt, &err), 0);
	CHECK(rt.workdir == NULL);
	image_runtime_free(&rt);
	const char *bad[] = { "{\"config\":{\"Env\":\"PATH=/x\"}}", "{\"config\":{\"Env\":[1]}}",
			      "{\"config\":{\"WorkingDir\":5}}", "{\"config\":{\"User\":1000}}", "not json" };
	for (int i = 0; i < 5; i++) {
		CHECK_INT(image_runtime_parse(bad[i], strlen(bad[i]), &rt, &err), -1);
		sbx_error_free(&err);
	}
}

TEST(reaper_decision_with_a_fake_clock)
{
	/* idle timeout 300 s, max exec 300 000 ms: busy grace 360 s */
	CHECK_INT(reaper_decide(300000, 300, 0, 300000), REAP_KEEP); /* not past it */
	CHECK_INT(reaper_decide(300001, 300, 0, 300000), REAP_IDLE);
	CHECK_INT(reaper_decide(300001, 300, 2, 300000), REAP_KEEP); /* busy */
	CHECK_INT(reaper_decide(660000, 300, 2, 300000), REAP_KEEP);
	CHECK_INT(reaper_decide(660001, 300, 2, 300000), REAP_WEDGED);
	CHECK_INT(reaper_decide(1, 0, 0, 300000), REAP_IDLE); /* 0 = next scan once idle */
	CHECK_INT(reaper_decide(0, 0, 0, 300000), REAP_KEEP);
	CHECK_INT(reaper_decide(UINT64_MAX, UINT64_MAX, 0, UINT64_MAX), REAP_KEEP); /* no overflow */
}

static const char *classify(int errnum, uint8_t op)
{
	static char code[8];
	sbx_error_t err = NULL;
	sbx_error_set(&err, errnum, "guest says no: /x");
	fs_error_classify(&err, op);
	snprintf(code, sizeof(code), "%s", err->scode);
	sbx_error_free(&err);
	return code;
}

TEST(guest_errnos_map_to_s_codes)
{
	CHECK_STR(classify(EACCES, PROTO_FS_CHMOD), "S215");
	CHECK_STR(classify(EPERM, PROTO_FS_CHMOD), "S215");
	/* A read-only mount is an I/O error, not a permission problem. */
	CHECK_STR(classify(EROFS, PROTO_FS_CHMOD), "S216");
	CHECK_STR(classify(EROFS, PROTO_FS_WRITE), "S216");
	CHECK_STR(classify(ENOENT, PROTO_FS_MV), "S211");
	CHECK_STR(classify(EXDEV, PROTO_FS_MV), "S216");
}

/* The one map every path uses (fs::* and run's files through the backend's
 * write_file), with the contract's codes (§3): a path component that is
 * not a directory is S212 "not a directory or wrong type", not S211. */
TEST(one_errno_map_for_writes_and_fs_ops)
{
	CHECK_STR(classify(ENOTDIR, PROTO_FS_WRITE), "S212");
	CHECK_STR(classify(ENOTDIR, PROTO_FS_LS), "S212");
	CHECK_STR(classify(ENOENT, PROTO_FS_WRITE), "S211");
	/* Writing onto a directory is an I/O error (§7.17); reading one is
	 * the wrong type (§7.18). */
	CHECK_STR(classify(EISDIR, PROTO_FS_WRITE), "S216");
	CHECK_STR(classify(EISDIR, PROTO_FS_READ), "S212");
	CHECK_STR(classify(EEXIST, PROTO_FS_MKDIR), "S213");
	CHECK_STR(classify(EACCES, PROTO_FS_WRITE), "S215");
	/* A code the VM layer already gave (the upload channel) is kept. */
	sbx_error_t err = NULL;
	sbx_error_scode(&err, SBX_S_FS_CHANNEL, "no data on the channel for 30 s");
	fs_error_classify(&err, PROTO_FS_WRITE);
	CHECK_STR(err->scode, "S218");
	sbx_error_free(&err);
}

TEST(memory_budget_arithmetic)
{
	/* TCG (and AUTO, not decided yet): the translation cache. */
	CHECK_INT(sbx_vm_cost_mib(512, 1, SBX_ACCEL_TCG, 64), 512 + SBX_VM_QEMU_BASE_MIB + 64);
	CHECK_INT(sbx_vm_cost_mib(512, 1, SBX_ACCEL_AUTO, 64), 512 + SBX_VM_QEMU_BASE_MIB + 64);
	/* KVM: no cache, but KVM's own memory: page tables and memslot maps
	 * (guest/512 each), a MiB per vCPU, 2 MiB for the VM. */
	CHECK_INT(sbx_vm_cost_mib(512, 1, SBX_ACCEL_KVM, 64), 512 + SBX_VM_QEMU_BASE_MIB + 1 + 1 + 1 + 2);
	CHECK_INT(sbx_vm_cost_mib(16384, 4, SBX_ACCEL_KVM, 64), 16384 + SBX_VM_QEMU_BASE_MIB + 32 + 32 + 4 + 2);
	CHECK_INT(sbx_vm_cost_mib(600, 2, SBX_ACCEL_KVM, 0), 600 + SBX_VM_QEMU_BASE_MIB + 2 + 2 + 2 + 2);
	CHECK_INT(sbx_kvm_overhead_mib(1024, 1), 2 + 2 + 1 + 2);
	/* A configuration's cost follows its decision. */
	struct sbx_config *cfg = sbx_config_defaults(NULL);
	CHECK(cfg != NULL);
	cfg->tcg_cache_mb = 64;
	CHECK_INT(sbx_config_vm_cost_mib(cfg, 512, 1), 512 + SBX_VM_QEMU_BASE_MIB + 64);
	atomic_store(&cfg->accel_in_use->in_use, SBX_ACCEL_KVM);
	CHECK_INT(sbx_config_vm_cost_mib(cfg, 512, 1), 512 + SBX_VM_QEMU_BASE_MIB + 5);
	sbx_config_free(cfg);
	/* The reserve is 10 % of the host, and never under 1 GiB. */
	CHECK_INT(sbx_mem_default_budget_mib(24000), 21600);
	CHECK_INT(sbx_mem_default_budget_mib(4096), 3072);
	CHECK_INT(sbx_mem_default_budget_mib(512), 0);
	char path[] = "/tmp/meminfo-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	const char text[] = "MemFree:  100 kB\nMemTotal:       24589344 kB\n";
	CHECK_INT(write(fd, text, sizeof(text) - 1), (long)sizeof(text) - 1);
	close(fd);
	uint64_t total = 0;
	sbx_error_t err = NULL;
	CHECK_INT(sbx_host_memtotal_mib(path, &total, &err), 0);
	CHECK_INT(total, 24013);
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK_INT(write(fd, "MemFree: 1 kB\n", 14), 14);
	close(fd);
	CHECK_INT(sbx_host_memtotal_mib(path, &total, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "no MemTotal") != NULL);
	sbx_error_free(&err);
	unlink(path);
	/* Takes fit exactly up to the limit; a failed one changes nothing. */
	struct sbx_mem_budget b;
	sbx_mem_budget_init(&b, 1000);
	CHECK_INT(sbx_mem_budget_take(&b, 600, 512, &err), 0);
	CHECK_INT(sbx_mem_budget_take(&b, 401, 300, &err), -1);
	CHECK_STR(err->scode, "S400");
	sbx_error_free(&err);
	CHECK_INT(sbx_mem_budget_take(&b, 400, 300, &err), 0);
	CHECK_INT(b.committed_mib, 1000);
	CHECK_INT(sbx_mem_budget_take(&b, UINT64_MAX, 1, &err), -1);
	sbx_error_free(&err);
	sbx_mem_budget_give(&b, 600);
	sbx_mem_budget_give(&b, 400);
	CHECK_INT(b.committed_mib, 0);
	CHECK_INT(b.vms, 0);
	/* The templates' RAM files take their share of the budget. */
	sbx_mem_budget_set_templates(&b, 300);
	CHECK_INT(sbx_mem_budget_take(&b, 701, 600, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "300 MiB held by snapshot templates") != NULL);
	sbx_error_free(&err);
	CHECK_INT(sbx_mem_budget_take(&b, 700, 600, &err), 0);
	sbx_mem_budget_set_templates(&b, UINT64_MAX);
	CHECK_INT(sbx_mem_budget_take(&b, 1, 1, &err), -1);
	sbx_error_free(&err);
	CHECK_INT(sbx_mem_budget_take_logs(&b, 1, &err), -1);
	sbx_error_free(&err);
	sbx_mem_budget_destroy(&b);

	/* Background logs: bytes, rounded up to MiB together, beside the VMs. */
	sbx_mem_budget_init(&b, 10);
	CHECK_INT(sbx_mem_budget_take(&b, 8, 8, &err), 0);
	CHECK_INT(sbx_mem_budget_take_logs(&b, 1048576, &err), 0);
	CHECK_INT(sbx_mem_budget_take_logs(&b, 524288, &err), 0);
	CHECK_INT(sbx_mem_budget_take_logs(&b, 524288, &err), 0);
	uint64_t committed = 0, limit = 0;
	sbx_mem_budget_read(&b, &committed, &limit);
	CHECK_INT(committed, 10);
	CHECK_INT(sbx_mem_budget_take_logs(&b, 1, &err), -1);
	CHECK_STR(err->scode, "S400");
	CHECK(strstr(sbx_error_msg(err), "2097152 bytes to the logs of 3 background processes") != NULL);
	sbx_error_free(&err);
	/* a VM does not fit beside them, and says what the logs hold */
	sbx_mem_budget_give(&b, 8);
	CHECK_INT(sbx_mem_budget_take(&b, 9, 8, &err), -1);
	CHECK(strstr(sbx_error_msg(err), "2 MiB by background processes' logs") != NULL);
	sbx_error_free(&err);
	sbx_mem_budget_give_logs(&b, 524288);
	sbx_mem_budget_read(&b, &committed, &limit);
	CHECK_INT(committed, 2); /* 1.5 MiB rounds up */
	CHECK_INT(b.logs, 2);
	CHECK_INT(sbx_mem_budget_take_logs(&b, UINT64_MAX, &err), -1);
	sbx_error_free(&err);
	sbx_mem_budget_destroy(&b);
}

struct release_later {
	struct sbx_mem_budget *b;
	uint64_t mib;
};

static void *end_release_later(void *arg)
{
	struct release_later *r = arg;
	usleep(50000);
	sbx_mem_budget_release_end(r->b, r->mib);
	return NULL;
}

/* A sandbox claimed for a stop leaves `list` before its QEMU is gone: a
 * create that does not fit waits for such releases, then asks again. */
TEST(mem_budget_release_wait)
{
	sbx_error_t err = NULL;
	struct sbx_mem_budget b;
	sbx_mem_budget_init(&b, 1000);
	CHECK(sbx_mem_budget_wait_released(&b, 0)); /* none begun */
	CHECK_INT(sbx_mem_budget_take(&b, 640, 512, &err), 0);
	sbx_mem_budget_release_begin(&b);
	CHECK(!sbx_mem_budget_wait_released(&b, 20)); /* begun, QEMU not gone */
	CHECK_INT(sbx_mem_budget_take(&b, 640, 512, &err), -1);
	sbx_error_free(&err);
	struct release_later r = { &b, 640 };
	pthread_t t;
	CHECK_INT(pthread_create(&t, NULL, end_release_later, &r), 0);
	CHECK(sbx_mem_budget_wait_released(&b, 60000));
	CHECK_INT(b.committed_mib, 0);
	CHECK_INT(sbx_mem_budget_take(&b, 640, 512, &err), 0);
	CHECK_INT(pthread_join(t, NULL), 0);
	/* a release of a sandbox whose VM was already detached gives nothing */
	sbx_mem_budget_release_begin(&b);
	sbx_mem_budget_release_end(&b, 0);
	CHECK(sbx_mem_budget_wait_released(&b, 0));
	CHECK_INT(b.committed_mib, 640);
	sbx_mem_budget_destroy(&b);
}

TEST(lang_check_before_boot)
{
	static const char *const fine[] = { "python", "py", "node", "js", "sh", "bash", "ruby", "perl",
					    "nodejs", "python3.11", "/usr/bin/env", "g++" };
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		sbx_error_t err = NULL;
		if (run_lang_check(fine[i], &err) < 0)
			sbx_test_fail(__FILE__, __LINE__, "%s refused: %s", fine[i], sbx_error_msg(err));
		sbx_error_free(&err);
	}
	sbx_error_t err = NULL;
	CHECK(run_lang_check("pyhton", &err) < 0);
	CHECK_STR(sbx_error_msg(err), "unknown lang 'pyhton' (did you mean 'python'?)");
	sbx_error_free(&err);
	CHECK(run_lang_check("shel", &err) < 0);
	CHECK_STR(sbx_error_msg(err), "unknown lang 'shel' (did you mean 'shell'?)");
	sbx_error_free(&err);
	CHECK(run_lang_check("", &err) < 0);
	CHECK_STR(sbx_error_msg(err), "lang is empty");
	sbx_error_free(&err);
	static const char *const bad[] = { "py thon", "bin/sh", "sh;rm", "$(x)", "a\nb" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(run_lang_check(bad[i], &err) < 0);
		CHECK(strstr(sbx_error_msg(err), "is neither a known lang") != NULL);
		sbx_error_free(&err);
	}
}

/* A fork or a sandbox from a snapshot publishes the record's guest ports
 * at host ports of its own: never the record's (which its source holds). */
TEST(ports_of_a_copy_are_its_own)
{
	json_t *rec = json_loads("[{\"guest\":8000,\"address\":\"127.0.0.1\",\"host\":41234},"
				 "{\"guest\":53,\"address\":\"127.0.0.1\",\"host\":41235}]", 0, NULL);
	struct sandbox_ports p;
	sbx_error_t err = NULL;
	CHECK(sandbox_ports_fresh(rec, &p, &err) == 0);
	CHECK_INT(p.n, 2);
	CHECK_INT(p.v[0].guest, 8000);
	CHECK_INT(p.v[1].guest, 53);
	CHECK_INT(p.v[0].host, 0);
	CHECK_INT(p.v[1].host, 0);
	CHECK_INT(p.v[0].fd, -1);
	json_decref(rec);
	CHECK(sandbox_ports_fresh(NULL, &p, &err) == 0);
	CHECK_INT(p.n, 0);
	rec = json_loads("[{\"host\":1}]", 0, NULL);
	CHECK(sandbox_ports_fresh(rec, &p, &err) < 0);
	json_decref(rec);
	sbx_error_free(&err);
}
