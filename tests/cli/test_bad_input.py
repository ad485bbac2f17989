"""The CLI refuses bad input when it starts, in one line naming what is wrong, never a
traceback: a variable with a value it does not take, a prices or models file it cannot use, a
gateway channels file that is not TOML or whose tables hold what their platform does not take
(issue 41)."""

from __future__ import annotations

import pytest

from starter import main


@pytest.mark.parametrize("name, value", [("AGENT_STREAM", "maybe"), ("AGENT_PROVIDER", "gemini"),
                                         ("AGENT_METRICS_PORT", "70000")])
def test_a_variable_with_a_bad_value_stops_the_cli_in_one_line(capsys, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")  # today's code, past its settings, fails here
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {name}={value!r}")


@pytest.mark.parametrize("name, content", [("AGENT_PRICES_FILE", '{"m": {"input": "cheap", "output": 1}}'),
                                           ("AGENT_MODELS_FILE", '{"m": {"vision": "yes"}}'),
                                           ("AGENT_MODELS_FILE", "[1, 2]"), ("AGENT_PRICES_FILE", "{")])
def test_a_bad_prices_or_models_file_stops_the_cli_in_one_line(capsys, monkeypatch, tmp_path, name, content):
    path = tmp_path / "table.json"
    path.write_text(content)
    monkeypatch.setenv(name, str(path))
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {name}={path}")


@pytest.mark.parametrize("text, says", [
    (b'[webhook\nsecret = "s"\n', "Expected ']'"),  # not TOML
    (b'[webhook]\nsecret = "\xff"\n', "channels.toml: 'utf-8'"),  # not UTF-8: the file unnamed before
    (b'[webhook]\nsecret = "s"\nport = "eighty"\nallowed_users = ["ci"]\n', "port"),  # a traceback
    (b'[webhook]\nsecret = "s"\ncalback_url = "http://x"\n', "calback_url"),  # accepted silently
    (b'[telegram]\ntoken = "t"\n', "bot_token"),  # a traceback
])  # fmt: skip
def test_a_bad_gateway_file_stops_the_gateway_in_one_line(capsys, monkeypatch, tmp_path, text, says):
    path = tmp_path / "channels.toml"
    path.write_bytes(text)
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    assert main(["gateway", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and says in err
