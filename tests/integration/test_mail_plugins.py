"""The mail adapter types are built-in plugins: registered like third-party ones, configured from plugins.toml."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fold_host.plugins import load_config
from fold_core.errors import ConfigError
from fold_core.plugins import load_types
from fold_host.plugins import plugin_manager as get_plugin_manager


def test_email_maildir_and_mbox_types_are_registered_builtins():
    registry = load_types(get_plugin_manager(entry_points=False))
    for name, plugin in (("email", "fold_adapters.mail.imap"), ("maildir", "fold_adapters.mail.mailbox"),
                         ("mbox", "fold_adapters.mail.mailbox")):
        entry = registry.get("adapter", name)
        assert entry is not None and entry.plugin == plugin and entry.origin == "builtin"
        assert entry.cls.channel == "email"


def test_plugins_toml_keys_of_contract_11_1(tmp_path, monkeypatch):
    monkeypatch.setenv("FOLD_WORK_MAIL_PASSWORD", "x")
    config = tmp_path / "plugins.toml"
    config.write_text('''
[[adapters]]
name = "work-mail"
type = "email"
every = "5m"
host = "imap.example.com"
port = 993
security = "ssl"
username = "me@example.com"
password_env = "FOLD_WORK_MAIL_PASSWORD"
folders = ["INBOX", "工作"]
first_run = "since:2026-10-01"

[[adapters]]
name = "archive"
type = "maildir"
every = "10m"
path = "Maildir"

[[adapters]]
name = "old-box"
type = "mbox"
path = "~/old.mbox"
first_run = "last:20"
''')
    loaded = load_config(str(config), entry_points=False)
    work, archive, old = loaded.adapters
    assert work.settings.folders == ("INBOX", "工作") and work.settings.first_run_policy.kind == "since"
    assert archive.settings.path == tmp_path / "Maildir" and archive.settings.first_run == "last:50"
    assert old.settings.first_run_policy.last == 20
    assert work.build().poll  # instances build


@pytest.mark.parametrize("table,field", [
    ('type = "email"\nhost = "imap.example.com"\nsecurity = "none"\nusername = "u"\npassword_env = "P"', "loopback"),
    ('type = "email"\nhost = "h"\nusername = "u"\npassword = "hunter2-xyz"', "password_env"),
    ('type = "maildir"\npath = "x"\nfirst_run = "all"', "first_run"),
    ('type = "mbox"\npath = "x"\nfolder = "INBOX"', "folder"),
])
def test_bad_mail_settings_name_the_field(tmp_path, monkeypatch, table, field):
    monkeypatch.setenv("P", "x")
    config = tmp_path / "plugins.toml"
    config.write_text(f'[[adapters]]\nname = "m"\n{table}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(str(config), entry_points=False)
    assert field in str(caught.value) and "hunter2-xyz" not in str(caught.value)


def test_plugin_modules_import_no_heavy_library():
    code = ("import sys, fold_adapters.mail.imap, fold_adapters.mail.mailbox\n"
            "heavy = [m for m in ('imapclient', 'inscriptis', 'lxml', 'charset_normalizer', 'email.parser', "
            "'fold_adapters.mail.mime') if m in sys.modules]\n"
            "print(heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
