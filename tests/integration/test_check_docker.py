"""scripts/check-docker.sh, the image check `make test` runs (ctest docker_check),
against the repository's Dockerfile and against broken copies of it:

- the Dockerfile passes: both stages named, nothing missing;
- without libcurl4-openssl-dev in the build stage (the Dockerfile before this
  check existed: `docker build` stopped at CMake's pkg_check_modules(CURL)) it
  fails, naming the pkg-config module libcurl and the package;
- without libjansson4 in the runtime stage it fails, naming the library
  striked loads and the package;
- with empty apt lists (apt-get update never ran) it fails and says so, rather
  than passing on what dpkg alone knows.
Each run takes a few seconds; none needs the network.
"""
import os
import subprocess
import tempfile
import time
import unittest

import harness as h

SCRIPT = os.path.join(h.SOURCE_DIR, "scripts", "check-docker.sh")
DOCKERFILE = os.path.join(h.SOURCE_DIR, "docker", "Dockerfile")


def check(dockerfile=DOCKERFILE, *extra):
    t0 = time.monotonic()
    p = subprocess.run([SCRIPT, "--dockerfile", dockerfile, "--bin-dir", h.BIN_DIR, *extra],
                       capture_output=True, text=True, timeout=120)
    return p, time.monotonic() - t0


class CheckDocker(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="strike-check-docker-")
        with open(DOCKERFILE) as f:
            self.text = f.read()

    def tearDown(self):
        self.tmp.cleanup()

    def variant(self, old, new=""):
        """The Dockerfile with `old` (a whole word, present once) replaced."""
        self.assertEqual(self.text.count(f" {old} "), 1, old)
        path = os.path.join(self.tmp.name, "Dockerfile")
        with open(path, "w") as f:
            f.write(self.text.replace(f" {old} ", f" {new} " if new else " "))
        return path

    def test_the_dockerfile_passes(self):
        p, took = check()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        self.assertIn('build stage "build" has all', p.stdout)
        self.assertIn('runtime stage "runtime" has the', p.stdout)
        print(f"check-docker.sh: {took:.1f} s")
        self.assertLess(took, 60)

    def test_build_stage_without_the_curl_headers(self):
        p, _ = check(self.variant("libcurl4-openssl-dev"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("build stage: pkg-config module libcurl (CMakeLists.txt) needs package "
                      "libcurl4-openssl-dev (it ships /usr/lib/", p.stderr)
        self.assertIn("1 gap(s)", p.stderr)

    def test_runtime_stage_without_a_library(self):
        p, _ = check(self.variant("libjansson4"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"runtime stage: striked loads \S*/libjansson\.so\.4 from package "
                                   r"libjansson4, which the runtime stage does not install")
        self.assertNotIn("build stage:", p.stderr)

    def test_a_build_package_apt_does_not_know(self):
        p, _ = check(self.variant("libjansson-dev", "libjansson-dev-nosuch"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn('stage build: apt-cache cannot resolve its packages', p.stderr)

    def test_empty_apt_lists(self):
        empty = os.path.join(self.tmp.name, "lists")
        os.makedirs(os.path.join(empty, "partial"))
        p, _ = check(DOCKERFILE, "-o", f"Dir::State::Lists={empty}", "-o", "Dir::Cache::pkgcache=",
                     "-o", "Dir::Cache::srcpkgcache=")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("the apt package lists are empty (apt-get update has never run here)", p.stderr)
        self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    h.require_env()
    unittest.main(verbosity=2)
