/* gdrpipe-ucx-version [MAJOR.MINOR]: prints the version of the UCX this
 * environment loads; with an argument, exits 1 when its major.minor is
 * another (gdrpipe-run asks it before launching anything). */
#include <ucp/api/ucp.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    unsigned major, minor, release, want_major, want_minor;

    ucp_get_version(&major, &minor, &release);
    printf("%u.%u.%u\n", major, minor, release);
    if (argc < 2) {
        return 0;
    }
    if (sscanf(argv[1], "%u.%u", &want_major, &want_minor) != 2) {
        fprintf(stderr, "gdrpipe-ucx-version: '%s' is not MAJOR.MINOR\n", argv[1]);
        return 2;
    }
    return ((major == want_major) && (minor == want_minor)) ? 0 : 1;
}
