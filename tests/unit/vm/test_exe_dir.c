#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vm/exe_dir.h"

static void check_part(const char *exe, const char *bindir, const char *libexecdir, const char *want)
{
	char *got = vm_installed_part(exe, bindir, libexecdir, "boot.erofs");
	if (want == NULL)
		CHECK(got == NULL);
	else
		CHECK_STR(got, want);
	free(got);
}

TEST(prefix_is_the_executables_directory_less_bindir)
{
	check_part("/usr/bin/sandbox-libkrun", "bin", "libexec", "/usr/libexec/sandbox-libkrun/boot.erofs");
	check_part("/opt/sbx/bin/sandbox-libkrun", "bin", "libexec", "/opt/sbx/libexec/sandbox-libkrun/boot.erofs");
	check_part("/tmp/d/usr/local/bin/sandbox-libkrun", "bin", "lib/x86_64-linux-gnu",
		   "/tmp/d/usr/local/lib/x86_64-linux-gnu/sandbox-libkrun/boot.erofs");
	check_part("/bin/sandbox-libkrun", "bin", "libexec", "/libexec/sandbox-libkrun/boot.erofs");
}

TEST(bindir_of_several_components)
{
	check_part("/p/local/bin/sandbox-libkrun", "local/bin", "libexec", "/p/libexec/sandbox-libkrun/boot.erofs");
}

TEST(not_installed_when_not_in_bindir)
{
	check_part("/work/build/sandbox-libkrun", "bin", "libexec", NULL);
	check_part("/work/sbin/sandbox-libkrun", "bin", "libexec", NULL);
	check_part("/work/xbin/sandbox-libkrun", "bin", "libexec", NULL);
	check_part("sandbox-libkrun", "bin", "libexec", NULL);
}

TEST(absolute_libexecdir_is_used_as_is)
{
	check_part("/anywhere/build/sandbox-libkrun", "bin", "/usr/lib/sbx", "/usr/lib/sbx/sandbox-libkrun/boot.erofs");
}
