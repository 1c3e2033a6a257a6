"""async_triggers.connection: where each option comes from (flags > environment > cqlshrc > defaults), host:port
entries, cqlshrc files as cqlsh reads them, TLS contexts, and the password kept out of repr, messages and argv."""
import re
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from async_triggers import config, connection, connection_clients
from async_triggers.connection import parse_hosts, resolve
from async_triggers.errors import ConfigError

SECRET = "s3cr3t-Pa55"


@pytest.fixture(autouse=True)
def no_user_cqlshrc(tmp_path, monkeypatch):
    """No test reads the real ~/.cassandra/cqlshrc."""
    monkeypatch.setattr(connection, "DEFAULT_CQLSHRC", tmp_path / "absent" / "cqlshrc")


def cqlshrc(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cqlshrc"
    path.write_text(text)
    return path


def test_should_default_to_the_local_node():
    conn = resolve({}, env={})
    assert (conn.hosts, conn.port, conn.username, conn.ssl, conn.local_dc) == (("127.0.0.1",), 9042, None, False, None)


def test_should_parse_host_and_port_entries():
    assert parse_hosts("a, b:9142,c") == (("a", "b", "c"), 9142)
    assert parse_hosts("[::1]:9043,::2") == (("::1", "::2"), 9043)
    assert parse_hosts(["a,b"]) == (("a", "b"), None)


@pytest.mark.parametrize("text, message", [
    ("a:9042,b:9142", "entries name different ports (a:9042, b:9142)"),
    ("a:x", "--hosts entry 'a:x': the port must be a number, found: 'x'"),
    ("a:70000", "the port must be between 1 and 65535, found: 70000"),
    (":9042", "entry ':9042' names no host"),
    ("[::1:9042", "cannot parse host '[::1:9042'"),
    (" , ", "--hosts names no host"),
])
def test_should_reject_bad_host_entries_naming_them(text, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_hosts(text)


def test_should_take_a_port_in_the_hosts_as_the_port():
    conn = resolve({"hosts": "10.0.0.1:9142"}, env={})
    assert (conn.hosts, conn.port) == (("10.0.0.1",), 9142)


def test_should_reject_a_port_in_the_hosts_that_contradicts_port():
    with pytest.raises(ConfigError, match="--hosts names port 9142 but --port says 9043"):
        resolve({"hosts": "a:9142", "port": 9043}, env={})


def test_should_prefer_flags_then_environment_then_cqlshrc_then_defaults(tmp_path):
    rc = cqlshrc(tmp_path, "[connection]\nhostname = rc-host\nport = 9001\n[authentication]\nusername = rc-user\n"
                           "password = rc-pass\n[protocol]\nversion = 4\n")
    env = {"ASYNC_TRIGGERS_PORT": "9002", "ASYNC_TRIGGERS_USERNAME": "env-user", "ASYNC_TRIGGERS_CQLSHRC": str(rc)}
    conn = resolve({"username": "flag-user"}, env=env)
    assert conn.hosts == ("rc-host",)           # only the cqlshrc names hosts
    assert conn.port == 9002                    # the environment beats the cqlshrc
    assert conn.username == "flag-user"         # the flag beats both
    assert conn.password == "rc-pass"
    assert conn.protocol_version == 4
    assert conn.local_dc is None                # nobody names it: the default
    assert conn.origin["port"] == "environment ASYNC_TRIGGERS_PORT"
    assert conn.origin["hosts"] == f"cqlshrc {rc} [connection] hostname"
    assert conn.origin["username"] == "--username"


def test_should_still_take_the_hosts_from_the_old_contact_points_variable():
    assert resolve({}, env={"ASYNC_TRIGGERS_CONTACT_POINTS": "x,y"}).hosts == ("x", "y")
    assert resolve({}, env={"ASYNC_TRIGGERS_CONTACT_POINTS": "x", "ASYNC_TRIGGERS_HOSTS": "z"}).hosts == ("z",)


def test_should_read_the_default_cqlshrc_when_it_exists(tmp_path, monkeypatch):
    rc = cqlshrc(tmp_path, "[authentication]\nusername = cassandra\npassword = 100%pass\n")
    monkeypatch.setattr(connection, "DEFAULT_CQLSHRC", rc)
    conn = resolve({}, env={})
    assert (conn.username, conn.password, conn.cqlshrc) == ("cassandra", "100%pass", rc)  # raw: a % is a %


def test_should_read_the_cqlshrc_ssl_section_as_cqlsh_does(tmp_path):
    ca, cert, key = (tmp_path / n for n in ("ca.pem", "client.pem", "client.key"))
    for f in (ca, cert, key):
        f.write_text("x")
    rc = cqlshrc(tmp_path, f"[connection]\nssl = true\n[ssl]\ncertfile = {ca}\nvalidate = false\nusercert = {cert}\n"
                           f"userkey = {key}\ncheck_hostname = true\n")
    conn = resolve({"cqlshrc": str(rc)}, env={})
    assert (conn.ssl, conn.ssl_ca, conn.ssl_validate, conn.ssl_cert, conn.ssl_key, conn.ssl_check_hostname) == \
        (True, ca, False, cert, key, True)


def test_should_not_turn_tls_on_for_a_cqlshrc_ssl_section_alone(tmp_path):
    (tmp_path / "ca.pem").write_text("x")
    rc = cqlshrc(tmp_path, f"[ssl]\ncertfile = {tmp_path / 'ca.pem'}\n")
    assert resolve({"cqlshrc": str(rc)}, env={}).ssl is False


def test_should_turn_tls_on_when_a_ca_is_given(tmp_path):
    (tmp_path / "ca.pem").write_text("x")
    conn = resolve({"ssl_ca": str(tmp_path / "ca.pem")}, env={})
    assert conn.ssl and conn.origin["ssl"] == "implied by --ssl-ca"


@pytest.mark.parametrize("text, message", [
    ("[connection]\nport = ninety\n", r"cqlshrc .*\[connection\] port: the port must be a number, found: 'ninety'"),
    ("[ssl]\nvalidate = maybe\n", r"\[ssl\] validate must be true or false, found: 'maybe'"),
    ("[connection\nport = 1\n", r"the cqlshrc file .* is not valid"),
])
def test_should_name_a_bad_cqlshrc_with_its_culprit(tmp_path, text, message):
    rc = cqlshrc(tmp_path, text)
    with pytest.raises(ConfigError, match=message):
        resolve({"cqlshrc": str(rc)}, env={})


def test_should_refuse_a_missing_cqlshrc_that_was_asked_for(tmp_path):
    with pytest.raises(ConfigError, match=r"--cqlshrc: no cqlshrc file at .*nope"):
        resolve({"cqlshrc": str(tmp_path / "nope")}, env={})


def test_should_reject_a_client_certificate_without_its_key(tmp_path):
    (tmp_path / "c.pem").write_text("x")
    with pytest.raises(ConfigError, match="--ssl-cert is set but --ssl-key is not"):
        resolve({"ssl_cert": str(tmp_path / "c.pem")}, env={})


def test_should_name_a_missing_ca_file():
    with pytest.raises(ConfigError, match="environment ASYNC_TRIGGERS_SSL_CA: no such file: /no/ca.pem"):
        resolve({}, env={"ASYNC_TRIGGERS_SSL_CA": "/no/ca.pem"})


def test_should_name_the_variable_of_a_bad_value():
    with pytest.raises(ConfigError, match="environment ASYNC_TRIGGERS_PORT: the port must be a number"):
        resolve({}, env={"ASYNC_TRIGGERS_PORT": "x"})
    with pytest.raises(ConfigError, match="protocol version must be between 3 and 6, found: 9"):
        resolve({"protocol_version": 9}, env={})


def test_should_refuse_a_password_given_as_an_argument():
    with pytest.raises(ConfigError, match="never taken as an argument"):
        resolve({"password": SECRET}, env={})


# --- the password -------------------------------------------------------------------------------------------------

def test_should_never_show_the_password_in_a_repr_or_a_description():
    conn = resolve({"username": "u"}, env={"ASYNC_TRIGGERS_PASSWORD": SECRET})
    settings = config.Settings(home=Path("/tmp"), connection=conn)
    assert conn.password == SECRET
    assert SECRET not in repr(conn) and SECRET not in repr(settings) and SECRET not in str(settings)
    described = "\n".join(conn.describe())
    assert SECRET not in described and "(set)" in described


def test_should_ask_for_the_password_on_a_terminal_once(monkeypatch):
    monkeypatch.setattr(connection, "_PROMPTED", {})
    asked = []
    conn = resolve({"username": "alice"}, env={})
    ask = lambda prompt: asked.append(prompt) or SECRET  # noqa: E731
    first = connection.with_password(conn, env={}, isatty=lambda: True, ask=ask)
    again = connection.with_password(conn, env={}, isatty=lambda: True, ask=ask)
    assert first.password == again.password == SECRET
    assert asked == ["Password for alice at 127.0.0.1:9042: "]


@pytest.mark.parametrize("env, tty, why", [({"CI": "true"}, True, "CI is set"), ({}, False, "stdin is not a terminal")])
def test_should_say_how_to_give_a_missing_password_without_a_terminal(monkeypatch, env, tty, why):
    monkeypatch.setattr(connection, "_PROMPTED", {})
    conn = resolve({"username": "alice"}, env={})
    with pytest.raises(ConfigError, match=f"user 'alice' needs a password and {why}.*ASYNC_TRIGGERS_PASSWORD"):
        connection.with_password(conn, env=env, isatty=lambda: tty, ask=lambda p: pytest.fail("asked"))


def test_should_need_no_password_without_a_username():
    conn = resolve({}, env={})
    assert connection.with_password(conn, env={"CI": "true"}, isatty=lambda: False) is conn


def test_should_give_a_child_every_option_in_its_environment_and_none_in_its_argv():
    conn = resolve({"hosts": "h1,h2", "port": 9142, "username": "u", "local_dc": "dc2"},
                   env={"ASYNC_TRIGGERS_PASSWORD": SECRET})
    env = connection.child_env(conn, base={"ASYNC_TRIGGERS_CONTACT_POINTS": "old", "PATH": "/bin"})
    assert env["ASYNC_TRIGGERS_PASSWORD"] == SECRET and env["PATH"] == "/bin"
    assert "ASYNC_TRIGGERS_CONTACT_POINTS" not in env
    again = resolve({}, env=env)
    assert (again.hosts, again.port, again.username, again.password, again.local_dc) == \
        (("h1", "h2"), 9142, "u", SECRET, "dc2")
    assert SECRET not in " ".join(connection.arguments_of(conn))


# --- the driver and Spark -----------------------------------------------------------------------------------------

def test_should_pass_auth_local_dc_and_protocol_to_the_driver():
    conn = resolve({"username": "u", "local_dc": "dc2", "protocol_version": 4, "port": 9142}, env={})
    kwargs = connection_clients.cluster_kwargs(conn)
    assert kwargs["port"] == 9142 and kwargs["protocol_version"] == 4
    assert kwargs["load_balancing_policy"]._child_policy.local_dc == "dc2"
    assert kwargs["auth_provider"].username == "u"
    assert "ssl_context" not in kwargs


def test_should_build_the_tls_context_as_cqlsh_does(tmp_path):
    ca = tmp_path / "ca.pem"
    _self_signed(tmp_path, ca, tmp_path / "ca.key")
    checked = connection_clients.ssl_context(resolve({"ssl_ca": str(ca)}, env={}))
    assert checked.verify_mode == ssl.CERT_REQUIRED and checked.check_hostname is False
    strict = connection_clients.ssl_context(resolve({"ssl_ca": str(ca), "ssl_check_hostname": True}, env={}))
    assert strict.check_hostname is True
    loose = connection_clients.ssl_context(resolve({"ssl": True, "ssl_validate": False}, env={}))
    assert loose.verify_mode == ssl.CERT_NONE


def test_should_name_a_ca_file_that_is_not_pem(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate")
    with pytest.raises(ConfigError, match=f"--ssl-ca: cannot load CA file {ca}"):
        connection_clients.ssl_context(resolve({"ssl_ca": str(ca)}, env={}))


def test_should_keep_secrets_out_of_the_public_spark_settings():
    conn = resolve({"username": "u", "local_dc": "dc1"}, env={"ASYNC_TRIGGERS_PASSWORD": SECRET})
    public, secret = connection_clients.spark_conf(conn)
    assert public["spark.cassandra.auth.username"] == "u"
    assert public["spark.cassandra.connection.localDC"] == "dc1"
    assert secret == {"spark.cassandra.auth.password": SECRET}
    assert SECRET not in repr(public)


def _self_signed(folder: Path, cert: Path, key: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=atc-test", "-days", "1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, cwd=folder)


def test_should_give_spark_pkcs12_stores_made_from_the_pem_files(tmp_path, monkeypatch):
    if shutil.which("keytool") is None:
        pytest.skip("the JDK's keytool is not installed")
    monkeypatch.setattr(connection_clients, "_STORES", {})
    ca, cert, key = tmp_path / "ca.pem", tmp_path / "client.pem", tmp_path / "client.key"
    _self_signed(tmp_path, ca, tmp_path / "ca.key")
    _self_signed(tmp_path, cert, key)
    public, secret = connection_clients.spark_conf(resolve({"ssl_ca": str(ca), "ssl_cert": str(cert), "ssl_key": str(key)},
                                                   env={}))
    trust = Path(public["spark.cassandra.connection.ssl.trustStore.path"])
    keys = Path(public["spark.cassandra.connection.ssl.keyStore.path"])
    assert public["spark.cassandra.connection.ssl.clientAuth.enabled"] == "true"
    assert oct(trust.parent.stat().st_mode & 0o777) == "0o700"
    for store, password_key in ((trust, "trustStore"), (keys, "keyStore")):
        password = secret[f"spark.cassandra.connection.ssl.{password_key}.password"]
        listed = subprocess.run(["keytool", "-list", "-keystore", str(store), "-storetype", "PKCS12",
                                 "-storepass:env", "P"], env={"P": password, "PATH": "/usr/bin:/bin"},
                                capture_output=True, text=True)
        assert listed.returncode == 0, listed.stdout + listed.stderr
        assert "1 entry" in listed.stdout
