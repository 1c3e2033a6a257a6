"""The operator's bundle: versioned, the jar's hash, the guide rendered, an install script that is idempotent."""
import subprocess
import tarfile
import zipfile

import pytest

from async_triggers import bundle
from async_triggers.errors import ConfigError


@pytest.fixture
def jar(tmp_path):
    path = tmp_path / "async-triggers-plugin.jar"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nImplementation-Version: 9.8.7\n"
                                           "Premain-Class: org.asynctriggers.ClassPathAgent\n")
    return path


def test_should_assemble_a_versioned_bundle_with_the_guide_and_the_jars_hash(jar, tmp_path):
    b = bundle.build(jar, tmp_path / "dist")
    assert b.version == "9.8.7" and b.folder.name == "async-triggers-9.8.7"
    assert {"async-triggers-plugin.jar", "install-on-node.sh", "INSTALL.md", "VERSION"} <= set(b.files)
    guide = (b.folder / "INSTALL.md").read_text()
    assert "Async Triggers 9.8.7" in guide and b.sha256 in guide and "{{" not in guide
    with tarfile.open(b.archive) as t:
        assert "async-triggers-9.8.7/async-triggers-plugin.jar" in t.getnames()


def test_should_refuse_a_jar_without_a_version(tmp_path):
    path = tmp_path / "x.jar"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    with pytest.raises(ConfigError, match="no Implementation-Version"):
        bundle.build(path, tmp_path / "dist")
    with pytest.raises(ConfigError, match="does not exist"):
        bundle.build(tmp_path / "absent.jar", tmp_path / "dist")


def test_should_add_the_agent_line_once_and_replace_an_older_path_on_install(jar, tmp_path):
    b = bundle.build(jar, tmp_path / "dist")
    options = tmp_path / "jvm-server.options"
    options.write_text("-Xss256k\n-javaagent:/old/place/async-triggers-plugin.jar\n")
    prefix = tmp_path / "opt"
    for _ in range(2):
        subprocess.run([str(b.folder / "install-on-node.sh"), str(options), str(prefix)], check=True,
                       capture_output=True)
    lines = options.read_text().splitlines()
    assert lines.count(f"-javaagent:{prefix}/async-triggers-plugin.jar") == 1
    assert "-Xss256k" in lines and not any("/old/place" in line for line in lines)
    assert (prefix / "async-triggers-plugin.jar").read_bytes() == jar.read_bytes()


def test_should_refuse_to_install_into_a_missing_options_file(jar, tmp_path):
    b = bundle.build(jar, tmp_path / "dist")
    done = subprocess.run([str(b.folder / "install-on-node.sh"), str(tmp_path / "nope")], capture_output=True, text=True)
    assert done.returncode == 2 and "nope does not exist" in done.stderr
