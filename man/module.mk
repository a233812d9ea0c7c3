# man/: the manual pages (mdoc), installed by `make install`, linted with
# mandoc and checked against `mosgw -D` and `mosgw --help` by man/test.sh.

MAN1 = man/mosctl.1 man/mosmsg.1 man/mosreplay.1
MAN5 = man/mosgw.ini.5
MAN8 = man/mosgw.8
EXAMPLES = $(wildcard examples/*.ini)

TEST_SCRIPTS += man/test.sh
