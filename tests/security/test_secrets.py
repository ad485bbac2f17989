import base64
from pathlib import Path
from urllib.parse import quote

import pytest
import structlog
from pydantic import BaseModel

from core.settings import SecretSettings
from runtime.secrets import SecretsError, SecretStore, redact_processor

TOKEN = "ghp_abcdefghijklmnop123456"


def from_env(environ: dict[str, str]) -> SecretStore:
    """The secrets a worker started in ``environ`` would have."""
    return SecretStore.from_settings(SecretSettings.from_env(environ))


def test_secret_store_from_env_reads_prefixed_variables_only():
    store = from_env({"AGENT_SECRET_GITHUB_TOKEN": TOKEN, "PATH": "/usr/bin", "AGENT_SECRET_": "x"})
    assert store.names() == ["GITHUB_TOKEN"]
    assert store.redact(f"token={TOKEN}!") == "token={{secret:GITHUB_TOKEN}}!"


def test_secret_store_reads_a_secrets_file_with_comments_and_quotes(tmp_path: Path):
    path = tmp_path / "secrets.env"
    path.write_text("# the database\n\nDB_PASSWORD = 'hunter2hunter2'\nAPI_KEY=sk-live=abc=def\n")
    store = from_env({"AGENT_SECRETS_FILE": str(path)})
    assert store.names() == ["API_KEY", "DB_PASSWORD"]
    assert store.redact("pw hunter2hunter2 key sk-live=abc=def") == (
        "pw {{secret:DB_PASSWORD}} key {{secret:API_KEY}}"
    )


def test_secret_store_env_wins_over_the_file(tmp_path: Path):
    path = tmp_path / "secrets.env"
    path.write_text("TOKEN=from-the-file\n")
    store = from_env({"AGENT_SECRETS_FILE": str(path), "AGENT_SECRET_TOKEN": "from-the-env"})
    assert store.restore("{{secret:TOKEN}}") == "from-the-env"
    assert store.redact("from-the-file") == "from-the-file"


def test_secret_store_refuses_a_malformed_file_line_without_showing_it(tmp_path: Path):
    path = tmp_path / "secrets.env"
    path.write_text("OK=value1234\nthis line holds sk-secret-value\n")
    with pytest.raises(SecretsError) as err:
        from_env({"AGENT_SECRETS_FILE": str(path)})
    assert ":2:" in str(err.value) and "sk-secret-value" not in str(err.value)


def test_secret_store_refuses_a_missing_secrets_file(tmp_path: Path):
    with pytest.raises(SecretsError, match="cannot read"):
        from_env({"AGENT_SECRETS_FILE": str(tmp_path / "nope")})


def test_redact_replaces_the_longest_of_overlapping_secrets_first():
    store = SecretStore({"SHORT": "abcd1234", "LONG": "abcd1234-extended", "INNER": "1234-ext"})
    assert store.redact("x abcd1234-extended y abcd1234 z") == "x {{secret:LONG}} y {{secret:SHORT}} z"


def test_redact_replaces_every_occurrence():
    store = SecretStore({"K": "s3cr3t-value"})
    assert store.redact("s3cr3t-values3cr3t-value, s3cr3t-value") == "{{secret:K}}{{secret:K}}, {{secret:K}}"


def test_redact_catches_base64_and_url_encoded_forms():
    value = "p@ss word/+?=x"
    store = SecretStore({"PW": value})
    b64 = base64.b64encode(value.encode()).decode()
    b64url = base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")
    text = f"basic {b64} jwt {b64url} query ?pw={quote(value, safe='')}"
    redacted = store.redact(text)
    assert redacted == (
        "basic {{secret:PW:base64}} jwt {{secret:PW:base64url}} query ?pw={{secret:PW:url}}"
    )
    assert store.restore(redacted) == text


def test_redact_ignores_secrets_shorter_than_four_characters_with_a_warning():
    with structlog.testing.capture_logs() as logs:
        store = SecretStore({"PIN": "123", "KEY": "long-enough"})
    assert store.redact("pin 123 key long-enough") == "pin 123 key {{secret:KEY}}"
    assert [(e["event"], e["secret"]) for e in logs] == [("secret too short to redact", "PIN")]
    assert "123" not in str(logs)


def test_redact_twice_leaves_placeholders_intact():
    store = SecretStore({"secret": "secret-value", "X": "secret"})
    once = store.redact("secret-value and secret")
    assert once == "{{secret:secret}} and {{secret:X}}"
    assert store.redact(once) == once


class Header(BaseModel):
    name: str
    value: str


class Request(BaseModel):
    url: str
    headers: list[Header]
    extra: dict[str, object]
    retries: int = 3


def test_redact_obj_walks_nested_models_dicts_and_lists_and_returns_a_copy():
    store = SecretStore({"TOKEN": TOKEN})
    original = Request(
        url=f"https://x.test/?t={TOKEN}",
        headers=[Header(name="Authorization", value=f"Bearer {TOKEN}")],
        extra={"nested": [{"deep": TOKEN}, ("tuple", TOKEN)], TOKEN: 1},
    )
    redacted = store.redact_obj(original)
    assert isinstance(redacted, Request) and isinstance(redacted.headers[0], Header)
    assert redacted.headers[0].value == "Bearer {{secret:TOKEN}}"
    assert redacted.url == "https://x.test/?t={{secret:TOKEN}}"
    assert redacted.extra == {
        "nested": [{"deep": "{{secret:TOKEN}}"}, ("tuple", "{{secret:TOKEN}}")],
        "{{secret:TOKEN}}": 1,
    }
    assert redacted.retries == 3
    assert TOKEN not in redacted.model_dump_json()
    assert original.headers[0].value == f"Bearer {TOKEN}"  # untouched


def test_restore_obj_round_trips_redact_obj():
    store = SecretStore({"TOKEN": TOKEN, "PW": "hunter2hunter2"})
    data = {"cmd": f"curl -u me:hunter2hunter2 -H 'X: {TOKEN}'", "n": [1, None, TOKEN]}
    assert store.restore_obj(store.redact_obj(data)) == data


def test_restore_leaves_unknown_placeholders_as_they_are():
    store = SecretStore({"KNOWN": "known-value"})
    assert store.restore("{{secret:KNOWN}} {{secret:OTHER}}") == "known-value {{secret:OTHER}}"


def test_restore_fills_placeholders_of_short_secrets():
    assert SecretStore({"PIN": "123"}).restore("pin={{secret:PIN}}") == "pin=123"


def test_empty_store_changes_nothing():
    store = from_env({})
    assert store.is_empty and store.names() == []
    assert store.redact("abc {{secret:X}}") == "abc {{secret:X}}"


def test_repr_never_shows_values():
    assert TOKEN not in repr(SecretStore({"TOKEN": TOKEN}))


def test_invalid_secret_names_are_refused():
    with pytest.raises(SecretsError):
        SecretStore({"BAD-NAME": "value1234"})


def test_redact_processor_removes_secrets_from_every_log_value():
    store = SecretStore({"TOKEN": TOKEN})
    processor = redact_processor(store)
    event = {"event": f"calling with {TOKEN}", "args": {"headers": [TOKEN]}, "count": 2}
    out = processor(None, "info", event)
    assert out == {
        "event": "calling with {{secret:TOKEN}}",
        "args": {"headers": ["{{secret:TOKEN}}"]},
        "count": 2,
    }


def test_redact_processor_in_a_structlog_chain_keeps_secrets_out_of_rendered_logs():
    store = SecretStore({"TOKEN": TOKEN})
    lines: list[str] = []
    logger = structlog.wrap_logger(
        structlog.ReturnLogger(),
        processors=[redact_processor(store), structlog.processors.JSONRenderer()],
    )
    lines.append(logger.info("tool done", command=f"gh auth login --with-token {TOKEN}"))
    assert TOKEN not in lines[0] and "{{secret:TOKEN}}" in lines[0]
