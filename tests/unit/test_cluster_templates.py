"""Unit tests of the install-dir templates: no Cassandra, no Maven."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from async_triggers.cluster import install, templates
from async_triggers.errors import ClusterError

OLD_KEY = re.compile(r"_in_(ms|s|kb|mb)$")


@pytest.fixture()
def rendered(tmp_path: Path) -> Path:
    install.render_files(tmp_path, "5.0.9", tmp_path)
    return tmp_path


def _all_keys(node, prefix=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield f"{prefix}{key}"
            yield from _all_keys(value, f"{prefix}{key}.")
    elif isinstance(node, list):
        for item in node:
            yield from _all_keys(item, prefix)


def test_should_render_every_template_completely(rendered: Path):
    names = [templates.output_name(n) for n in templates.template_names()]
    assert {"bin/cassandra", "bin/cassandra.in.sh", "bin/nodetool", "bin/cqlsh", "conf/cassandra.yaml",
            "conf/cassandra-env.sh", "conf/jvm-server.options", "conf/jvm17-server.options",
            "conf/logback.xml", "conf/logback-tools.xml"} <= set(names)
    assert not any(Path(n).name.startswith("_") for n in names), "partials are not rendered on their own"
    for name in names:
        text = (rendered / name).read_text()
        assert text.endswith("\n") and "{{" not in text and "{%" not in text, name
    assert (rendered / "0.version.txt").read_text().strip() == "5.0.9"
    assert (rendered / "conf" / "triggers").is_dir()


def test_should_render_a_cassandra_yaml_that_parses_and_uses_new_key_names_only(rendered: Path):
    data = yaml.safe_load((rendered / "conf" / "cassandra.yaml").read_text())
    keys = list(_all_keys(data))
    old = [k for k in keys if OLD_KEY.search(k.split(".")[-1])]
    assert old == [], f"Cassandra 5.0 rejects old key names mixed with new ones: {old}"
    assert data["num_tokens"] == 1
    assert data["seed_provider"][0]["class_name"].endswith("SimpleSeedProvider")
    assert data["authenticator"]["class_name"].endswith("AllowAllAuthenticator")
    for key, value in install.LAPTOP_TUNING.items():
        assert data[key] == value, key
    assert data["commitlog_sync_period"] == "10000ms"


def test_should_render_launchers_as_executable_bash_that_ccm_can_rewrite(rendered: Path):
    for name in ("cassandra", "cassandra.in.sh", "nodetool", "cqlsh"):
        path = rendered / "bin" / name
        assert path.stat().st_mode & 0o111, f"{name} not executable"
        subprocess.run(["bash", "-n", str(path)], check=True)
    launcher = (rendered / "bin" / "cassandra").read_text()
    assert "org.apache.cassandra.service.CassandraDaemon" in launcher
    assert "-R)" in launcher and "-p)" in launcher            # what ccm passes
    env_sh = (rendered / "conf" / "cassandra-env.sh").read_text()
    assert re.search(r'^JMX_PORT="\d+"$', env_sh, re.M)        # ccm rewrites this line per node
    include = (rendered / "bin" / "cassandra.in.sh").read_text()
    # ccm rewrites every line containing CASSANDRA_HOME= / CASSANDRA_CONF=: exactly one assignment each
    assert len(re.findall(r"CASSANDRA_HOME=", include)) == 1
    assert len(re.findall(r"CASSANDRA_CONF=", include)) == 1


def test_should_open_the_jdk_internals_in_the_java17_options(rendered: Path):
    opts = (rendered / "conf" / "jvm17-server.options").read_text().splitlines()
    flags = [line for line in opts if line.startswith("-")]
    for needed in ("--add-exports java.base/jdk.internal.misc=ALL-UNNAMED",
                   "--add-opens java.base/java.nio=ALL-UNNAMED",
                   "--add-opens java.base/sun.nio.ch=ALL-UNNAMED",
                   "-XX:+UseG1GC"):
        assert needed in flags
    assert not any("UseConcMarkSweepGC" in f or "UseBiasedLocking" in f for f in flags)


def test_should_compute_classpath_agent_and_jvm_options_in_cassandra_in_sh(rendered: Path, tmp_path: Path):
    """Source the include in bash and check what it computes (needs java on the PATH)."""
    lib = rendered / "lib"
    lib.mkdir()
    (lib / "cassandra-all-5.0.9.jar").write_bytes(b"")
    (lib / "jamm-0.4.0.jar").write_bytes(b"")
    script = (f'CASSANDRA_INCLUDE={rendered}/bin/cassandra.in.sh; . "$CASSANDRA_INCLUDE"; '
              'echo "$CLASSPATH"; echo "$JAVA_AGENT"; jvm_options server')
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].split(":")[0] == f"{rendered}/conf"
    assert f"{lib}/cassandra-all-5.0.9.jar" in out[0]
    assert "-javaagent:" in out[1] and "jamm-0.4.0.jar" in out[1]
    assert "-XX:+UseG1GC" in out[2] and "-ea" in out[2]


def test_should_name_the_path_of_an_invalid_distribution(tmp_path: Path):
    with pytest.raises(ClusterError, match=str(tmp_path / "nope")):
        install.validate_distribution(tmp_path / "nope", "5.0.9")
    (tmp_path / "dist" / "bin").mkdir(parents=True)
    with pytest.raises(ClusterError, match=r"dist does not look like a Cassandra binary distribution: missing .*bin/cassandra"):
        install.validate_distribution(tmp_path / "dist", "5.0.9")


def test_should_accept_an_official_distribution_layout_of_the_expected_version(tmp_path: Path):
    dist = tmp_path / "apache-cassandra-5.0.9"
    for f in ("bin/cassandra", "bin/nodetool", "conf/cassandra.yaml", "conf/cassandra-env.sh",
              "conf/logback.xml", "lib/apache-cassandra-5.0.9.jar"):
        (dist / f).parent.mkdir(parents=True, exist_ok=True)
        (dist / f).write_text("")
    assert install.validate_distribution(dist, "5.0.9") == dist
    assert (dist / "0.version.txt").read_text().strip() == "5.0.9"   # ccm reads it
    with pytest.raises(ClusterError, match="holds Cassandra 5.0.9, expected 4.1.0"):
        install.validate_distribution(dist, "4.1.0")


def test_should_change_the_fingerprint_with_the_version():
    assert install.fingerprint("5.0.9") != install.fingerprint("5.0.8")
