"""One version for the wheel and the plugin: pyproject.toml's and the plugin pom's are the same string, so a bundle
and the `ctl` that deploys to it name one release."""
import re
import tomllib

from helpers import ROOT


def test_should_give_the_wheel_and_the_plugin_one_version():
    python = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    pom = (ROOT / "trigger-plugin" / "pom.xml").read_text()
    plugin = re.search(r"<artifactId>async-triggers-plugin</artifactId>\s*<version>([^<]+)</version>", pom)
    assert plugin is not None, "trigger-plugin/pom.xml: no <version> after the artifactId async-triggers-plugin"
    assert plugin.group(1) == python
