"""pastchats' own rules: secrets as chats and agent logs hold them (after any punctuation, in any
command, in prose), each with the code and docs around the same words that are not secrets."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from server.cli import cli
from storage.redaction import Redaction
from tests.redaction.secrets import ALNUM, B64URL, HEX, made

REDACTION = Redaction()

ANT_OAT = "sk-ant-oat01-" + made(B64URL, 95) + "AA"
ANT_API = "sk-ant-api03-" + made(B64URL, 93) + "AA"
OPENROUTER = "sk-or-v1-" + made(HEX, 64)
XAI = "xai-" + made(ALNUM, 80)
REPLICATE = "r8_" + made(ALNUM, 37)
GROQ = "gsk_" + made(ALNUM, 52)
DEEPSEEK = "sk-" + made(HEX, 32)
GOCSPX = "GOCSPX-" + made(B64URL, 28)
DISCORD = "MTE" + made(ALNUM, 23) + "." + made(B64URL, 6) + "." + made(B64URL, 38)
TELEGRAM = "7" + made("0123456789", 9) + ":AA" + made(B64URL, 33)
TWILIO = made(HEX, 32)
TWILIO_SID = "AC" + made(HEX, 32)
GITHUB = "ghp_" + made(ALNUM, 36)
OPAQUE = made(ALNUM, 40)

# (text, the secret it holds, the kind that names it)
POSITIVE = [
    (f"export CLAUDE_CODE_OAUTH_TOKEN={ANT_OAT}", ANT_OAT, "anthropic-oauth-token"),
    (f"my token is {ANT_OAT}.", ANT_OAT, "anthropic-oauth-token"),
    (f'OpenAI(base_url="https://openrouter.ai/api/v1", api_key="{OPENROUTER}")', OPENROUTER, "openrouter-api-key"),
    (f"XAI key: {XAI}", XAI, "xai-api-key"),
    (f"replicate.Client(api_token={REPLICATE!r})", REPLICATE, "replicate-api-token"),
    (f"groq = Groq(api_key={GROQ!r})", GROQ, "groq-api-key"),
    (f"DeepSeek key {DEEPSEEK}, base url https://api.deepseek.com", DEEPSEEK, "deepseek-api-key"),
    (f'"client_secret": "{GOCSPX}",', GOCSPX, "gcp-oauth-client-secret"),
    (f"client.run({DISCORD!r})", DISCORD, "discord-bot-token"),
    (f"the bot token is {DISCORD}.", DISCORD, "discord-bot-token"),
    (f"bot = Bot('{TELEGRAM}')", TELEGRAM, "telegram-bot-token"),
    (f"https://api.telegram.org/bot{TELEGRAM}/getMe", TELEGRAM, "telegram-bot-token"),
    (f"client = Client('{TWILIO_SID}', '{TWILIO}')", TWILIO, "twilio-auth-token"),
    (f"Twilio auth token: {TWILIO}", TWILIO, "twilio-auth-token"),
    ("DATABASE_URL=postgresql://app:fceZZ522#wNmF@db.internal:5432/app", "fceZZ522#wNmF", "url-password"),
    ("redis-cli -u redis://:s3cr3tRedisPw@cache:6379/0", "s3cr3tRedisPw", "url-password"),
    ("jdbc:oracle:thin:scott/tiger9Z@db.example.com:1521:ORCL", "tiger9Z", "oracle-password"),
    ("db:\n  host: db.internal\n  password: hunter22\n", "hunter22", "yaml-password"),
    ("DB_PASSWORD=pa$$w0rd99", "pa$$w0rd99", "env-secret"),
    ("     2→DB_PASSWORD=hunter22", "hunter22", "env-secret"),
    ("curl -u admin:pa!ss42 https://jenkins.internal/api/json", "pa!ss42", "command-password"),
    ("sshpass -p 'Sup3rS3cret' ssh deploy@10.0.0.4", "Sup3rS3cret", "command-password"),
    ("PGPASSWORD=Xk29dLq psql -h db -U app", "Xk29dLq", "command-password"),
    ("mysql -uroot -pRootPw2024 -h 127.0.0.1 shop", "RootPw2024", "command-password"),
    ("docker login -u ana -p Dk7rLogin registry.example.com", "Dk7rLogin", "command-password"),
    (f"fetch(url, {{ headers: {{ Authorization: 'Bearer {OPAQUE}' }} }})", OPAQUE, "http-auth-header"),
    (f'requests.get(url, headers={{"Authorization": "Bearer {OPAQUE}"}})', OPAQUE, "http-auth-header"),
    (f"http GET api.example.com/me 'Authorization:Bearer {OPAQUE}'", OPAQUE, "http-auth-header"),
    (f"GET /v1/me HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Basic {OPAQUE}\r\n", OPAQUE, "http-auth-header"),
    ("the wifi password is Tr0ub4dor&3 if anyone asks", "Tr0ub4dor&3", "prose-password"),
    ("My bank PIN is 4921.", "4921", "prose-password"),
    ("家里的wifi密码是 Zx9#kLm2，别告诉别人", "Zx9#kLm2", "prose-password"),
    (f"my key is {ANT_API}.", ANT_API, "anthropic-api-key"),
    (f"(see {ANT_API})", ANT_API, "anthropic-api-key"),
    (f"密钥：{ANT_API}，谢谢", ANT_API, "anthropic-api-key"),
    (f"https://api.example.com/x?api_key={GITHUB}&page=2", GITHUB, "github-pat"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), POSITIVE, ids=[f"{k}-{i}" for i, (_, _, k) in enumerate(POSITIVE)])
def test_the_secret_is_found_whole_and_named(text: str, secret: str, kind: str) -> None:
    found = REDACTION.find(text)
    assert [(f.kind, f.secret) for f in found if secret in f.secret] == [(kind, secret)], found


NEGATIVE = [
    "ERRORTOKEN = token.ERRORTOKEN\nNEWLINE_TOKEN = token.NEWLINE",
    "docker run -e POSTGRES_PASSWORD=postgres -e PASSWORD=nodejs node:20",
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "class Settings:\n    password: str\n    token: Optional[str] = None\n    api_key: SecretStr\n",
    "interface Login {\n  password: string;\n  token?: string;\n}",
    "db:\n  password: ${DB_PASSWORD}\n  token: !vault db/token\n  api_key: <your-key>\n",
    "The password is required. Your password is too short; the password was changed.",
    "If the PIN is wrong three times the card locks; the PIN is 4 digits.",
    "if password is None:\n    raise ValueError\nassert password is user.password",
    "echo $TOKEN | docker login -u ana --password-stdin ghcr.io",
    "mysql -u root -p -h 127.0.0.1   # asks for the password",
    "curl -u $USER:$TOKEN https://api.example.com\ncurl -u user:password https://example.com",
    "headers = {'Authorization': f'Bearer {token}'}\nfetch(url, {headers: {Authorization: `Bearer ${token}`}})",
    "Authorization: Bearer YOUR_ACCESS_TOKEN\nAuthorization: Bearer <token>",
    'sshpass -p "$SSHPASS" ssh host',
    "Run `mysqldump -p` and type the password when asked.",
    "the password is stored in the keychain, and the passphrase is optional",
    "package.module.Class.method(arg).attribute.other_attribute.yet_another_attribute",
    "redis://localhost:6379/0 and postgres://localhost/db and https://example.com:8443/path#frag",
    "https://user@example.com/ and ssh://git@github.com:22/org/repo.git",
    "pin: 3\npassword_min_length: 12\npassword_policy: strict\n",
    "PIN 1234 is an example in the docs; see pin code length",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_code_and_docs_around_the_same_words_are_left_alone(text: str) -> None:
    assert REDACTION.find(text) == []


def test_a_mistyped_allow_kind_is_an_error_naming_the_kinds(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"'github_pat' is not a kind of secret; did you mean github-pat.*the kinds"):
        Redaction(allow=("github_pat",))
    env = {"PASTCHATS_REDACT_ALLOW": '["github_pat"]'}
    result = CliRunner(env=env).invoke(cli, ["--home", str(tmp_path / "store"), "stats"])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert "did you mean github-pat" in result.output
    assert "aws-access-token" in result.output


def test_allowed_kinds_stay_and_others_go() -> None:
    text = f"key {GROQ} and {GITHUB}"
    assert [f.kind for f in Redaction(allow=("groq-api-key",)).find(text)] == ["github-pat"]
