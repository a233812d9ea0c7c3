# packaging/: the service's configuration installed by `make install` (and
# so by the Debian package, built from debian/), and the test that builds
# the package and checks it.

TEST_SCRIPTS += packaging/test.sh
